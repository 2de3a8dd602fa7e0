// The LCG-2005-1 trace under faults (issue 50): a slice of the trace replayed, time-compressed and
// with its run times scaled down (lcg-slice.ts), on two brokers on PostgreSQL and four agents, each
// agent in a network namespace of its own where namespaces can be made (ha-cluster.ts), in three
// scenarios, each on a fresh cluster and schema:
// - `fault-free`;
// - `slow-links`: every link between agents and brokers delays each chunk 200 ms plus up to 50 ms
//   of jitter, and every 15 s resets every connection (the agents reconnect);
// - `db-restarts-leader-kill`: two database restarts (ha-replay.ts says how: a private cluster's
//   `pg_ctl stop -m immediate` and start, or a forwarder's cut) and one kill -9 of the leading
//   broker (started again 5 s later; it comes back as a standby), at 20 %, 70 % and 45 % of the
//   fault-free makespan.
// Figures per scenario: jobs submitted, succeeded, succeeded exactly once (one successful attempt
// in the store and one completion by the job's own account), tasks with more than one successful
// attempt (must be 0), makespan (the first job's due submit to the last job's end in the store),
// and its ratio to the fault-free run (target: within 25 %).
//
// STEWARD_BENCH_LCG_FAULTS_JOBS (200), _SKIP (0: jobs of the trace skipped first), _COMPRESS (20:
// trace seconds of submissions a real second), _RUN_SCALE (200: run times divided by it), _MAX_RUN
// (15 s) and _MIN_RUN (0.2 s), _DB_DOWN (5 s a restart), _SCENARIOS (all three, comma-separated).

import { existsSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { PASS, RESET } from "../test/helpers/tcp-forwarder.ts";
import { DELAY_LINK, numberSetting } from "./bench-settings.ts";
import { type BenchContext, type Benchmark, progress as note, REPOSITORY, round } from "./benchmark.ts";
import { type HaCluster, startHaCluster } from "./ha-cluster.ts";
import {
  type BenchDatabase,
  openBenchDatabase,
  type SliceOutcome,
  sleepUntil,
  sliceOutcome,
  submitSlice,
  waitAllEnded,
} from "./ha-replay.ts";
import { lowerBoundSeconds, type ReplayJob, sliceOfTrace } from "./lcg-slice.ts";
import { readTrace } from "./replay-lcg.ts";

const TRACE = process.env.STEWARD_LCG_TRACE ?? join(REPOSITORY, "bench/workloads/LCG-2005-1.swf.gz");
const SCENARIOS = ["fault-free", "slow-links", "db-restarts-leader-kill"] as const;
type Scenario = (typeof SCENARIOS)[number];
const AGENTS = 4;
const SLOTS = 4;
const BROKERS = 2;
const RESET_EVERY_MS = 15_000;
/** How long a reset lasts: connections cut and new ones refused. */
const RESET_MS = 200;
const LEADER_BACK_AFTER_MS = 5_000;
const TARGET_RATIO = 1.25;

export interface LcgFaultSettings {
  jobs: number;
  skip: number;
  compress: number;
  runScale: number;
  minRunSeconds: number;
  maxRunSeconds: number;
  dbDownSeconds: number;
}

export function lcgFaultSettings(prefix = "STEWARD_BENCH_LCG_FAULTS"): LcgFaultSettings {
  return {
    jobs: numberSetting(`${prefix}_JOBS`, 200),
    skip: numberSetting(`${prefix}_SKIP`, 0),
    compress: numberSetting(`${prefix}_COMPRESS`, 20),
    runScale: numberSetting(`${prefix}_RUN_SCALE`, 200),
    minRunSeconds: numberSetting(`${prefix}_MIN_RUN`, 0.2),
    maxRunSeconds: numberSetting(`${prefix}_MAX_RUN`, 15),
    dbDownSeconds: numberSetting(`${prefix}_DB_DOWN`, 5),
  };
}

export function traceSlice(settings: LcgFaultSettings): ReplayJob[] {
  return sliceOfTrace(readTrace(TRACE, settings.skip + settings.jobs), settings);
}

export function startBenchCluster(
  label: string,
  storeUrl: string,
  more: { agentEnv?: Record<string, string>; keep?: boolean } = {},
) {
  return startHaCluster({
    label,
    storeUrl,
    brokers: BROKERS,
    agents: AGENTS,
    slots: SLOTS,
    namespaces: true,
    leaseSeconds: 2,
    heartbeatSeconds: 1,
    hostTimeoutSeconds: 10,
    ...more,
  });
}

interface FaultRecord {
  atSeconds: number;
  what: string;
  tookSeconds: number;
}

/** Runs `fault` at `atMs` after `startedAt`, unless `done()` by then; records it. */
async function faultAt(
  startedAt: number,
  atMs: number,
  done: () => boolean,
  what: string,
  fault: () => Promise<string | undefined>,
  log: FaultRecord[],
  progress: (message: string) => void,
): Promise<void> {
  await sleepUntil(startedAt + atMs, done);
  if (done()) return;
  const began = performance.now();
  const detail = await fault();
  const record = {
    atSeconds: round((began - startedAt) / 1000, 1),
    what: detail ? `${what} (${detail})` : what,
    tookSeconds: round((performance.now() - began) / 1000, 1),
  };
  log.push(record);
  progress(`  fault at ${record.atSeconds} s: ${record.what}, ${record.tookSeconds} s`);
}

/** Kills the leading broker with kill -9, waits for the other to lead, and starts it again later. */
export async function killLeader(cluster: HaCluster): Promise<string> {
  const leader = await cluster.leader();
  if (!leader) return "no leader to kill";
  const killedAt = performance.now();
  await leader.kill9();
  let tookOver: number | null = null;
  for (let i = 0; i < 200 && tookOver === null; i++) {
    if ((await cluster.leader()) !== null) tookOver = performance.now() - killedAt;
    else await sleep(50);
  }
  setTimeout(() => {
    const back = performance.now();
    leader.restart().then(
      () =>
        note(
          `  broker${leader.index + 1} started again, up in ${round((performance.now() - back) / 1000, 1)} s`,
        ),
      (error: Error) => note(`  broker${leader.index + 1} not started again: ${error.message}`),
    );
  }, LEADER_BACK_AFTER_MS).unref();
  return `broker${leader.index + 1} killed; another led after ${tookOver === null ? "more than 10 s" : `${round(tookOver / 1000, 2)} s`}`;
}

/** Every link reset for RESET_MS, then back to `mode`. */
export async function resetLinks(cluster: HaCluster, back = DELAY_LINK): Promise<string> {
  for (const link of cluster.links) link.setMode(RESET);
  await sleep(RESET_MS);
  for (const link of cluster.links) link.setMode(back);
  return `every agent connection reset, ${RESET_MS} ms`;
}

interface ScenarioResult extends SliceOutcome {
  scenario: Scenario;
  agentNetwork: string;
  submitted: number;
  submitRetries: number;
  makespanSeconds: number | null;
  faults: FaultRecord[];
  loadAverageAtStart: number;
}

async function runScenario(
  scenario: Scenario,
  jobs: readonly ReplayJob[],
  database: BenchDatabase,
  baseMs: number,
  settings: LcgFaultSettings,
  { options, progress }: BenchContext,
): Promise<ScenarioResult> {
  const schema = `steward_lcg_${scenario.replaceAll("-", "_")}_${Date.now().toString(36)}`;
  const cluster = await startBenchCluster(`lcg-${scenario}`, database.storeUrl(schema), {
    keep: options.keep,
  });
  try {
    const runsFile = join(cluster.root, "runs.log");
    if (scenario === "slow-links") for (const link of cluster.links) link.setMode(DELAY_LINK);
    const loadAverageAtStart = round(os.loadavg()[0], 2);
    const prefix = "lcg";
    const faults: FaultRecord[] = [];
    let done = false;
    const startedAt = performance.now();
    const startedAtEpoch = Date.now();
    const faulting: Promise<void>[] = [];
    const at = (fraction: number, what: string, fault: () => Promise<string | undefined>) =>
      faulting.push(faultAt(startedAt, fraction * baseMs, () => done, what, fault, faults, progress));
    if (scenario === "slow-links") {
      faulting.push(
        (async () => {
          for (let n = 1; !done; n++) {
            await faultAt(
              startedAt,
              n * RESET_EVERY_MS,
              () => done,
              "links reset",
              () => resetLinks(cluster),
              faults,
              progress,
            );
          }
        })(),
      );
    }
    if (scenario === "db-restarts-leader-kill") {
      const restart = async () => {
        await database.restart(settings.dbDownSeconds * 1000);
        return `down ${settings.dbDownSeconds} s`;
      };
      at(0.2, "database restart", restart);
      at(0.45, "kill -9 of the leader", () => killLeader(cluster));
      at(0.7, "database restart", restart);
    }
    const { retries } = await submitSlice({
      jobs,
      brokers: cluster.brokers,
      token: cluster.adminToken,
      prefix,
      runsFile,
      startedAt,
    });
    await waitAllEnded(database.directUrl(schema), schema, prefix, 30 * 60_000);
    done = true;
    await Promise.all(faulting);
    for (const link of cluster.links) link.setMode(PASS);
    const outcome = await sliceOutcome(database.directUrl(schema), schema, prefix, runsFile);
    return {
      scenario,
      agentNetwork: cluster.agentNetwork,
      submitted: jobs.length,
      submitRetries: retries,
      ...outcome,
      makespanSeconds:
        outcome.lastEndedAt === null ? null : round((outcome.lastEndedAt - startedAtEpoch) / 1000, 2),
      faults,
      loadAverageAtStart,
    };
  } finally {
    await cluster.stop();
    await database.dropSchema(schema).catch(() => {});
  }
}

export const lcgFaultsBenchmark: Benchmark = {
  name: "lcg-faults",
  description: `a slice of LCG-2005-1 on ${BROKERS} brokers on PostgreSQL and ${AGENTS} agents in network namespaces: makespan fault-free, with slow links (200 ms, resets) and with two database restarts and a leader kill`,
  async run(context) {
    const { progress } = context;
    if (!existsSync(TRACE)) return { lcgFaults: { skipped: `no trace at ${TRACE}` } };
    const settings = lcgFaultSettings();
    const wanted = (process.env.STEWARD_BENCH_LCG_FAULTS_SCENARIOS ?? SCENARIOS.join(","))
      .split(",")
      .filter(Boolean) as Scenario[];
    for (const name of wanted) if (!SCENARIOS.includes(name)) throw new Error(`no scenario ${name}`);
    const jobs = traceSlice(settings);
    const bound = lowerBoundSeconds(jobs, AGENTS * SLOTS);
    progress(
      `lcg-faults: ${jobs.length} jobs, submitted over ${round(jobs.at(-1)!.submitAtMs / 1000, 1)} s, ${round(
        jobs.reduce((sum, job) => sum + job.runSeconds, 0),
        1,
      )} s of sleep; at least ${round(bound, 1)} s on ${AGENTS * SLOTS} slots`,
    );
    const database = await openBenchDatabase(progress);
    const results: ScenarioResult[] = [];
    try {
      let baseMs = bound * 1000;
      for (const scenario of SCENARIOS.filter((name) => wanted.includes(name))) {
        progress(`lcg-faults: ${scenario}`);
        const result = await runScenario(scenario, jobs, database, baseMs, settings, context);
        if (scenario === "fault-free" && result.makespanSeconds !== null)
          baseMs = result.makespanSeconds * 1000;
        results.push(result);
      }
    } finally {
      await database.stop();
    }
    const faultFree = results.find((result) => result.scenario === "fault-free")?.makespanSeconds ?? null;
    const figures = Object.fromEntries(
      results.map((result) => {
        const ratio =
          faultFree && result.makespanSeconds ? round(result.makespanSeconds / faultFree, 3) : null;
        return [
          result.scenario,
          { ...result, ratioToFaultFree: ratio, withinTarget: ratio === null ? null : ratio <= TARGET_RATIO },
        ];
      }),
    );
    progress("lcg-faults: scenario | submitted | succeeded | exactly once | >1 success | makespan s | ratio");
    for (const [name, each] of Object.entries(figures)) {
      progress(
        `  ${name} | ${each.submitted} | ${each.states.succeeded ?? 0} | ${each.succeededExactlyOnce} | ${each.tasksSucceededMoreThanOnce} | ${each.makespanSeconds} | ${each.ratioToFaultFree}`,
      );
    }
    return {
      lcgFaults: {
        settings,
        lowerBoundSeconds: round(bound, 1),
        database: database.kind,
        targetRatio: TARGET_RATIO,
        ...figures,
      },
    };
  },
};
