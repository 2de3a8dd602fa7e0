// The overhead Steward adds to a Snakemake job: one workflow of RULES tiny independent jobs
// (`echo > {output}`) and a gather over them, run by Snakemake 7 with the shipped profile
// (deploy/snakemake/steward: steward-submit, steward-status) on `up --agents 1 --slots 4`, and with
// `--cluster-sync sh` (each job script run by a local shell), with the same --jobs, --latency-wait
// and status checks a second, in alternating order. Skipped without snakemake.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Benchmark, busyFraction, machineCpu, median, REPOSITORY, round } from "./benchmark.ts";
import { type Steward, startSteward } from "./steward-process.ts";
import { runsCleanly, runTimed } from "./timed-command.ts";

const RULES = Number(process.env.STEWARD_BENCH_SNAKEMAKE_RULES ?? 50);
const ROUNDS = Number(process.env.STEWARD_BENCH_ENGINE_ROUNDS ?? 2);
/** Snakemake's --jobs, and the agent's slots: the same number of jobs at once on either side. */
const JOBS = 4;
/** No output is late on one machine; the same value on both sides all the same. */
const LATENCY_WAIT_SECONDS = 5;
/** The profile's value; `--cluster-sync` has it fixed at 10 in Snakemake 7. */
const STATUS_CHECKS_PER_SECOND = 10;
const TIMEOUT_MS = 30 * 60_000;
const PROFILE = join(REPOSITORY, "deploy", "snakemake", "steward");

type Side = "steward" | "sh";

/** RULES independent jobs, one gather over their outputs; `all` asks for the gather. */
function snakefile(rules: number): string {
  return `N = ${rules}

rule all:
    input: "gathered.txt"

rule tiny:
    output: "parts/{i}.txt"
    shell: "echo {wildcards.i} > {output}"

rule gather:
    input: expand("parts/{i}.txt", i=range(N))
    output: "gathered.txt"
    shell: "cat {input} > {output}"
`;
}

/** One run of the workflow in a fresh folder; its wall time in seconds. */
async function runWorkflow(side: Side, steward: Steward, keep: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), `steward-bench-snakemake-${side}-`));
  try {
    writeFileSync(join(dir, "Snakefile"), snakefile(RULES));
    const common = [
      "--jobs",
      String(JOBS),
      "--latency-wait",
      String(LATENCY_WAIT_SECONDS),
      "--max-status-checks-per-second",
      String(STATUS_CHECKS_PER_SECOND),
      "--quiet",
    ];
    const engine = side === "steward" ? ["--profile", PROFILE] : ["--cluster-sync", "sh"];
    const run = await runTimed({
      command: "snakemake",
      args: [...engine, ...common],
      cwd: dir,
      env: {
        ...process.env,
        PATH: `${join(REPOSITORY, "bin")}:${process.env.PATH}`,
        STEWARD_URL: steward.url,
        STEWARD_TOKEN: steward.token,
        // Snakemake 7 waits 10 s between two passes over its running jobs, 1 s where CI=true.
        CI: "true",
      },
      timeoutMs: TIMEOUT_MS,
    });
    const lines = readFileSync(join(dir, "gathered.txt"), "utf8").trim().split("\n");
    if (lines.length !== RULES)
      throw new Error(`snakemake (${side}) gathered ${lines.length} parts, not ${RULES}`);
    return run.seconds;
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

export const snakemakeOverheadBenchmark: Benchmark = {
  name: "snakemake-overhead",
  description: `Snakemake 7: ${RULES} tiny rules and a gather, the Steward profile (1 agent of ${JOBS} slots) against --cluster-sync sh, --jobs ${JOBS}`,
  async run({ options, progress }) {
    if (!Number.isInteger(RULES) || RULES < 1)
      throw new Error(`STEWARD_BENCH_SNAKEMAKE_RULES=${RULES}: expected a positive whole number`);
    if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
      throw new Error(`STEWARD_BENCH_ENGINE_ROUNDS=${ROUNDS}: expected a positive whole number`);
    if (!runsCleanly("snakemake", ["--version"])) {
      const missing = "snakemake is not installed (Debian's snakemake package)";
      progress(`snakemake-overhead: skipped: ${missing}`);
      return { snakemakeOverhead: { skipped: missing } };
    }
    const steward = await startSteward({
      label: "snakemake-overhead",
      agents: 1,
      slots: JOBS,
      keep: options.keep,
    });
    try {
      const jobs = RULES + 1;
      const seconds: Record<Side, number[]> = { steward: [], sh: [] };
      const machineBefore = machineCpu();
      for (let round_ = 0; round_ < ROUNDS; round_++) {
        const order: Side[] = round_ % 2 === 0 ? ["sh", "steward"] : ["steward", "sh"];
        for (const side of order) {
          const wall = await runWorkflow(side, steward, options.keep);
          seconds[side].push(wall);
          progress(`snakemake-overhead: round ${round_ + 1} ${side}: ${jobs} jobs in ${round(wall, 2)} s`);
        }
      }
      const stewardSeconds = median(seconds.steward);
      const shSeconds = median(seconds.sh);
      const overheadMsPerJob = ((stewardSeconds - shSeconds) * 1000) / jobs;
      progress(
        `snakemake-overhead: steward ${round(stewardSeconds, 2)} s, sh ${round(shSeconds, 2)} s: ${round(overheadMsPerJob)} ms a job`,
      );
      return {
        snakemakeOverhead: {
          rules: RULES,
          jobs,
          snakemakeJobs: JOBS,
          slots: JOBS,
          rounds: ROUNDS,
          stewardSeconds: round(stewardSeconds, 2),
          shSeconds: round(shSeconds, 2),
          overheadMsPerJob: round(overheadMsPerJob),
          runsSeconds: {
            steward: seconds.steward.map((s) => round(s, 2)),
            sh: seconds.sh.map((s) => round(s, 2)),
          },
          // The whole machine (all cores) over every run: other work shows here.
          machineBusyFraction: busyFraction(machineBefore, machineCpu()),
        },
      };
    } finally {
      await steward.stop();
    }
  },
};
