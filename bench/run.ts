// `npm run bench [-- --only NAME[,NAME]] [--cpu-prof] [--keep] [--list]`: runs the benchmark
// modules in order and prints one JSON document with all their figures on stdout. Progress goes
// to stderr. Adding a figure: write a module exporting a Benchmark and list it below.

import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import {
  type Benchmark,
  type BenchOptions,
  type Figures,
  mergeFigures,
  progress,
  REPOSITORY,
  round,
} from "./benchmark.ts";
import { checkpointOverheadBenchmark } from "./checkpoint-overhead.ts";
import { cliBenchmark } from "./cli.ts";
import { crashRestartBenchmark } from "./crash-restart.ts";
import { dashboardBenchmark } from "./dashboard.ts";
import { dataCacheBenchmark } from "./data-cache.ts";
import { endToEndBenchmark } from "./end-to-end.ts";
import { enforcementBenchmark } from "./enforcement.ts";
import { futuresRoundTripBenchmark } from "./futures-round-trip.ts";
import { gangBenchmark } from "./gang.ts";
import { lcgFaultsBenchmark } from "./lcg-faults.ts";
import { manyHostsBenchmark } from "./many-hosts.ts";
import { migrate100MbBenchmark } from "./migrate-100mb.ts";
import { millionTasksBenchmark } from "./million-tasks.ts";
import { planPassBenchmark } from "./plan-pass.ts";
import { postgresBenchmark } from "./postgres.ts";
import { recoveryBenchmark } from "./recovery.ts";
import { replayLcgBenchmark } from "./replay-lcg.ts";
import { replayLcgFastBenchmark, replayLcgRealBenchmark } from "./replay-lcg-real.ts";
import { sideBySideBenchmark } from "./side-by-side.ts";
import { slowLinksBenchmark } from "./slow-links.ts";
import { slurmPoolBenchmark } from "./slurm-pool.ts";
import { snakemakeOverheadBenchmark } from "./snakemake-overhead.ts";
import { soakBenchmark } from "./soak.ts";
import { killAllStewardsSync, PROFILE_DIR, stopAllStewards } from "./steward-process.ts";
import { submitBenchmark } from "./submit.ts";
import { toilOverheadBenchmark } from "./toil-overhead.ts";
import { vsSlurmBenchmark } from "./vs-slurm.ts";
import { workflowBenchmark } from "./workflow.ts";
import { xargsBenchmark } from "./xargs.ts";

/** In run order; a benchmark's `needs` come before it. */
const BENCHMARKS: Benchmark[] = [
  planPassBenchmark,
  submitBenchmark,
  cliBenchmark,
  xargsBenchmark,
  endToEndBenchmark,
  workflowBenchmark,
  enforcementBenchmark,
  crashRestartBenchmark,
  slowLinksBenchmark,
  gangBenchmark,
  migrate100MbBenchmark,
  checkpointOverheadBenchmark,
  dataCacheBenchmark,
  replayLcgBenchmark,
  replayLcgRealBenchmark,
  replayLcgFastBenchmark,
  lcgFaultsBenchmark,
  soakBenchmark,
  manyHostsBenchmark,
  millionTasksBenchmark,
  recoveryBenchmark,
  postgresBenchmark,
  slurmPoolBenchmark,
  vsSlurmBenchmark,
  sideBySideBenchmark,
  dashboardBenchmark,
  futuresRoundTripBenchmark,
  snakemakeOverheadBenchmark,
  toilOverheadBenchmark,
];

const USAGE = `usage: npm run bench [-- options]
  --only NAME[,NAME]  run only these benchmarks (and what they need); repeatable
  --cpu-prof          CPU-profile the Steward processes; summaries on stderr, profiles in ${PROFILE_DIR}
  --keep              keep the Steward data folders and logs
  --out FILE          also write the JSON document to FILE
  --list              list the benchmarks
benchmarks:
${BENCHMARKS.map((b) => `  ${b.name.padEnd(20)} ${b.description}`).join("\n")}
`;

/** The chosen benchmarks plus everything they need, in registry order. */
function select(only: string[]): Benchmark[] {
  if (only.length === 0) return BENCHMARKS;
  const byName = new Map(BENCHMARKS.map((b) => [b.name, b]));
  const wanted = new Set<string>();
  const add = (name: string) => {
    const benchmark = byName.get(name);
    if (!benchmark) throw new Error(`no benchmark ${name}; one of ${[...byName.keys()].join(", ")}`);
    if (wanted.has(name)) return;
    wanted.add(name);
    for (const need of benchmark.needs ?? []) add(need);
  };
  for (const name of only) add(name);
  return BENCHMARKS.filter((b) => wanted.has(b.name));
}

/** Which code was measured: src/ changes under everyone's hands. */
function sourceState(): { commit: string | null; modifiedFiles: number | null } {
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: REPOSITORY, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  try {
    const commit = git("rev-parse", "--short", "HEAD").trim();
    const modifiedFiles = git("status", "--porcelain", "--", "src").split("\n").filter(Boolean).length;
    return { commit, modifiedFiles };
  } catch {
    return { commit: null, modifiedFiles: null };
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      only: { type: "string", multiple: true, default: [] },
      "cpu-prof": { type: "boolean", default: false },
      keep: { type: "boolean", default: false },
      out: { type: "string" },
      list: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help || values.list) {
    process.stderr.write(USAGE);
    return 0;
  }
  const only = values.only.flatMap((value) => value.split(",")).filter(Boolean);
  const chosen = select(only);
  const options: BenchOptions = { cpuProf: values["cpu-prof"], keep: values.keep };

  const at = new Date().toISOString();
  // Read before the benchmarks start: the processes they start run this source (a commit made
  // while a long benchmark runs is not what it measured).
  const source = sourceState();
  const loadAtStart = os.loadavg().map((x) => round(x, 2));
  // Two cores: anything else running (tests, another `steward up`) shows in the figures.
  if (loadAtStart[0] > 0.5)
    progress(`warning: load average ${loadAtStart[0]} at start; figures may be noisy`);
  const started = performance.now();
  const results: Figures = {};
  for (const benchmark of chosen) {
    const ran = new Set(chosen.slice(0, chosen.indexOf(benchmark)).map((b) => b.name));
    const missing = (benchmark.needs ?? []).filter((need) => !ran.has(need));
    if (missing.length) throw new Error(`${benchmark.name} needs ${missing.join(", ")} to run before it`);
    progress(`${benchmark.name}: ${benchmark.description}`);
    mergeFigures(results, await benchmark.run({ options, results, progress }));
  }
  const cpus = os.cpus();
  const document = {
    at,
    machine: {
      cpus: os.availableParallelism(),
      node: process.version,
      cpuModel: cpus[0]?.model ?? null,
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      memoryMb: Math.round(os.totalmem() / 2 ** 20),
      loadAverage: { atStart: loadAtStart, atEnd: os.loadavg().map((x) => round(x, 2)) },
    },
    source,
    benchmarks: chosen.map((b) => b.name),
    durationSeconds: round((performance.now() - started) / 1000),
    ...results,
  };
  const text = `${JSON.stringify(document, null, 2)}\n`;
  if (values.out) writeFileSync(values.out, text);
  process.stdout.write(text);
  return 0;
}

process.on("exit", killAllStewardsSync);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping`);
    stopAllStewards().finally(() => process.exit(130));
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  async (error) => {
    process.stderr.write(
      `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`,
    );
    await stopAllStewards();
    process.exitCode = 1;
  },
);
