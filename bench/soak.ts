// The soak (issue 50): the LCG slice of lcg-faults.ts replayed round after round on the same
// cluster (two brokers on PostgreSQL, four agents in network namespaces) for a given time, with a
// fault every so often (in turn: every agent connection reset; the links slowed to 200 ms for a
// while; a database restart). Each round's jobs are removed once they have all ended, as a user of
// a long-lived installation would, so that what the store keeps is what it must. Every N seconds
// it samples each broker's and agent's RSS (/proc/PID/status) and open descriptors
// (/proc/PID/fd), the store's size (the schema's tables, indexes and TOAST) and the event loop's
// delay (p99 over the sampling window: a broker's /metrics, an agent's event-loop-probe.ts), and
// prints a table over time and each series' growth per hour (growth.ts). No broker is killed: a
// process started again would start its series over.
//
// STEWARD_BENCH_SOAK_SECONDS (3600), _SAMPLE_SECONDS (60), _FAULT_SECONDS (120: a fault this
// often), and the slice as lcg-faults.ts takes it under STEWARD_BENCH_SOAK_ (_JOBS 200, …).

import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { PASS } from "../test/helpers/tcp-forwarder.ts";
import { DELAY_LINK, numberSetting } from "./bench-settings.ts";
import { type Benchmark, REPOSITORY, round } from "./benchmark.ts";
import type { LagWindow } from "./event-loop-probe.ts";
import { growthPerHour, lastOverFirstThird, type Sample } from "./growth.ts";
import type { HaCluster } from "./ha-cluster.ts";
import {
  type BenchDatabase,
  onDatabase,
  openBenchDatabase,
  sleepUntil,
  sliceOutcome,
  submitSlice,
  waitAllEnded,
} from "./ha-replay.ts";
import {
  type LcgFaultSettings,
  lcgFaultSettings,
  resetLinks,
  startBenchCluster,
  traceSlice,
} from "./lcg-faults.ts";
import { metricIn } from "./steward-process.ts";

export interface SoakOptions {
  durationSeconds: number;
  sampleSeconds: number;
  faultSeconds: number;
  slice: LcgFaultSettings;
  progress(message: string): void;
}

/** One process's figures at one sample; null where it could not be read (a process gone). */
export interface ProcessSample {
  rssMb: number | null;
  fds: number | null;
  lagP99Ms: number | null;
}

export interface SoakRow {
  atSeconds: number;
  processes: Record<string, ProcessSample>;
  storeMb: number | null;
}

export interface SoakResult {
  database: string;
  agentNetwork: string;
  seconds: number;
  rounds: number;
  submitted: number;
  succeeded: number;
  succeededExactlyOnce: number;
  tasksSucceededMoreThanOnce: number;
  faults: string[];
  rows: SoakRow[];
  /** Per series ("broker1 rssMb", "store storeMb", …): growth per hour and last third over first third. */
  growth: Record<string, { perHour: number | null; lastOverFirstThird: number | null }>;
}

export function rssMbOf(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? round(Number(match[1]) / 1024, 1) : null;
  } catch {
    return null;
  }
}

export function descriptorsOf(pid: number): number | null {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

async function brokerLagP99Ms(url: string, token: string): Promise<number | null> {
  try {
    const response = await fetch(`${url}/metrics`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(5000),
    });
    const value = metricIn(await response.text(), "nodejs_eventloop_lag_p99_seconds");
    return value === null ? null : round(value * 1000, 2);
  } catch {
    return null;
  }
}

function agentLagP99Ms(dir: string, pid: number): number | null {
  try {
    const window = JSON.parse(readFileSync(join(dir, `lag-${pid}.json`), "utf8")) as LagWindow;
    return round(window.p99Ms, 2);
  } catch {
    return null;
  }
}

async function sample(
  cluster: HaCluster,
  database: BenchDatabase,
  schema: string,
  lagDir: string,
  atSeconds: number,
): Promise<SoakRow> {
  const processes: Record<string, ProcessSample> = {};
  for (const broker of cluster.brokers) {
    const pid = broker.pid();
    processes[`broker${broker.index + 1}`] = {
      rssMb: rssMbOf(pid),
      fds: descriptorsOf(pid),
      lagP99Ms: await brokerLagP99Ms(broker.url, cluster.adminToken),
    };
  }
  cluster.agents.forEach((agent, i) => {
    const pid = agent.pid();
    processes[`agent${i + 1}`] = {
      rssMb: rssMbOf(pid),
      fds: descriptorsOf(pid),
      lagP99Ms: agentLagP99Ms(lagDir, pid),
    };
  });
  const bytes = await database.schemaBytes(schema).catch(() => null);
  return { atSeconds, processes, storeMb: bytes === null ? null : round(bytes / 1048576, 2) };
}

/** Each series of the rows: per process and figure, and the store. */
export function seriesOf(rows: readonly SoakRow[]): Map<string, Sample[]> {
  const series = new Map<string, Sample[]>();
  const add = (name: string, atSeconds: number, value: number | null) => {
    if (value === null) return;
    const list = series.get(name) ?? [];
    list.push({ atSeconds, value });
    series.set(name, list);
  };
  for (const row of rows) {
    for (const [name, figures] of Object.entries(row.processes)) {
      add(`${name} rssMb`, row.atSeconds, figures.rssMb);
      add(`${name} fds`, row.atSeconds, figures.fds);
      add(`${name} lagP99Ms`, row.atSeconds, figures.lagP99Ms);
    }
    add("store storeMb", row.atSeconds, row.storeMb);
  }
  return series;
}

/** `work` again every 500 ms while it fails, for a minute at most (a database restart under way). */
async function whileRestarting<T>(work: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await work();
    } catch (error) {
      if (tries >= 120) throw error;
      await sleep(500);
    }
  }
}

/** Removes the jobs of a round through the leader (they have all ended); the store may be restarting meanwhile. */
async function removeRound(cluster: HaCluster, database: BenchDatabase, schema: string, prefix: string) {
  const ids = await whileRestarting(() =>
    onDatabase(database.directUrl(schema), async (client) => {
      const result = await client.query(
        `SELECT id FROM ${pg.escapeIdentifier(schema)}.jobs WHERE name LIKE $1`,
        [`${prefix}-%`],
      );
      return result.rows.map((row: { id: string }) => row.id);
    }),
  );
  for (const id of ids) {
    for (let tries = 0; tries < 40; tries++) {
      const leader = await cluster.leader();
      const answer = leader
        ? await fetch(`${leader.url}/api/v1/jobs/${id}`, {
            method: "DELETE",
            headers: { authorization: `Bearer ${cluster.adminToken}` },
            signal: AbortSignal.timeout(10_000),
          }).catch(() => null)
        : null;
      await answer?.arrayBuffer();
      if (answer && (answer.ok || answer.status === 404)) break;
      await sleep(250);
    }
  }
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const { progress } = options;
  const jobs = traceSlice(options.slice);
  const database = await openBenchDatabase(progress);
  const schema = `steward_soak_${Date.now().toString(36)}`;
  const lagDir = mkdtempSync(join(tmpdir(), "steward-bench-lag-"));
  const probe = join(REPOSITORY, "bench", "event-loop-probe.ts");
  let cluster: HaCluster | null = null;
  try {
    cluster = await startBenchCluster("soak", database.storeUrl(schema), {
      agentEnv: {
        NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${probe}`].filter(Boolean).join(" "),
        STEWARD_LAG_PROBE_DIR: lagDir,
        STEWARD_LAG_PROBE_WINDOW_MS: String(Math.round(options.sampleSeconds * 1000)),
      },
    });
    const running = cluster;
    const runsFile = join(running.root, "runs.log");
    const startedAt = performance.now();
    const elapsed = () => (performance.now() - startedAt) / 1000;
    const rows: SoakRow[] = [];
    const faults: string[] = [];
    let done = false;
    const sampling = (async () => {
      for (let n = 0; !done; n++) {
        await sleepUntil(startedAt + n * options.sampleSeconds * 1000, () => done);
        if (done) return;
        const row = await sample(running, database, schema, lagDir, round(elapsed(), 1));
        rows.push(row);
        const b = row.processes.broker1;
        progress(
          `soak ${row.atSeconds} s: broker1 ${b?.rssMb} MB ${b?.fds} fds lag ${b?.lagP99Ms} ms; store ${row.storeMb} MB`,
        );
      }
    })();
    const faulting = (async () => {
      const kinds = ["links reset", "slow links", "database restart"] as const;
      for (let n = 1; ; n++) {
        await sleepUntil(startedAt + n * options.faultSeconds * 1000, () => done);
        if (done) return;
        const kind = kinds[(n - 1) % kinds.length];
        faults.push(`${round(elapsed(), 1)} s: ${kind}`);
        if (kind === "links reset") await resetLinks(running, PASS);
        else if (kind === "slow links") {
          for (const link of running.links) link.setMode(DELAY_LINK);
          const until = performance.now() + Math.min(20_000, (options.faultSeconds * 1000) / 2);
          while (!done && performance.now() < until) await sleep(250);
          for (const link of running.links) link.setMode(PASS);
        } else await database.restart(options.slice.dbDownSeconds * 1000);
      }
    })();
    let rounds = 0;
    const totals = { submitted: 0, succeeded: 0, succeededExactlyOnce: 0, tasksSucceededMoreThanOnce: 0 };
    while (elapsed() < options.durationSeconds) {
      const prefix = `r${rounds}`;
      await submitSlice({
        jobs,
        brokers: running.brokers,
        token: running.adminToken,
        prefix,
        runsFile,
        startedAt: performance.now(),
      });
      await waitAllEnded(database.directUrl(schema), schema, prefix, 30 * 60_000);
      const outcome = await whileRestarting(() =>
        sliceOutcome(database.directUrl(schema), schema, prefix, runsFile),
      );
      totals.submitted += jobs.length;
      totals.succeeded += outcome.states.succeeded ?? 0;
      totals.succeededExactlyOnce += outcome.succeededExactlyOnce;
      totals.tasksSucceededMoreThanOnce += outcome.tasksSucceededMoreThanOnce;
      await removeRound(running, database, schema, prefix);
      rounds++;
      progress(`soak: round ${rounds} ended at ${round(elapsed(), 1)} s (${JSON.stringify(outcome.states)})`);
    }
    done = true;
    await Promise.all([sampling, faulting]);
    const growth: SoakResult["growth"] = {};
    for (const [name, samples] of seriesOf(rows)) {
      const perHour = growthPerHour(samples);
      const ratio = lastOverFirstThird(samples);
      growth[name] = {
        perHour: perHour === null ? null : round(perHour, 2),
        lastOverFirstThird: ratio === null ? null : round(ratio, 3),
      };
    }
    return {
      database: database.kind,
      agentNetwork: running.agentNetwork,
      seconds: round(elapsed(), 1),
      rounds,
      ...totals,
      faults,
      rows,
      growth,
    };
  } finally {
    await cluster?.stop();
    await database.dropSchema(schema).catch(() => {});
    await database.stop();
    rmSync(lagDir, { recursive: true, force: true });
  }
}

/** The table over time: per row the brokers' and the agents' (their largest) figures and the store. */
export function soakTable(result: SoakResult): string {
  const lines = [
    "t s | b1 MB | b2 MB | b1 fd | b2 fd | b1 lag ms | b2 lag ms | agents MB max | fd max | lag ms max | store MB",
  ];
  const max = (values: (number | null)[]) => {
    const known = values.filter((value): value is number => value !== null);
    return known.length ? Math.max(...known) : null;
  };
  for (const row of result.rows) {
    const agents = Object.entries(row.processes).filter(([name]) => name.startsWith("agent"));
    const b1 = row.processes.broker1;
    const b2 = row.processes.broker2;
    lines.push(
      [
        row.atSeconds,
        b1?.rssMb,
        b2?.rssMb,
        b1?.fds,
        b2?.fds,
        b1?.lagP99Ms,
        b2?.lagP99Ms,
        max(agents.map(([, each]) => each.rssMb)),
        max(agents.map(([, each]) => each.fds)),
        max(agents.map(([, each]) => each.lagP99Ms)),
        row.storeMb,
      ].join(" | "),
    );
  }
  lines.push("growth per hour (least squares) | last third over first third:");
  for (const [name, each] of Object.entries(result.growth))
    lines.push(`  ${name}: ${each.perHour} /h | ${each.lastOverFirstThird}`);
  return lines.join("\n");
}

export const soakBenchmark: Benchmark = {
  name: "soak",
  description:
    "the LCG slice in a loop on 2 brokers on PostgreSQL and 4 agents with periodic faults: RSS, descriptors, store size and event-loop lag over time, and their growth per hour",
  async run({ progress }) {
    const result = await runSoak({
      durationSeconds: numberSetting("STEWARD_BENCH_SOAK_SECONDS", 3600),
      sampleSeconds: numberSetting("STEWARD_BENCH_SOAK_SAMPLE_SECONDS", 60),
      faultSeconds: numberSetting("STEWARD_BENCH_SOAK_FAULT_SECONDS", 120),
      slice: lcgFaultSettings("STEWARD_BENCH_SOAK"),
      progress,
    });
    progress(`soak (load average now ${round(os.loadavg()[0], 2)}):\n${soakTable(result)}`);
    return { soak: result };
  },
};
