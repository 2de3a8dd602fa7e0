// postgres: the broker on PostgreSQL (STEWARD_TEST_PG_URL, a fresh schema each time): submit
// throughput and 2,000-task end-to-end throughput beside the SQLite figures of `submit` and
// `end-to-end`, the end-to-end rate over xargs's of the same run, the broker's and the database's
// CPU per request and per task, and the failover time of two brokers on one database: from kill -9
// of the leader to the first submit the other accepts (median of 5).

import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Api } from "./api.ts";
import { type Benchmark, type BenchOptions, figure, median, REPOSITORY, round, since } from "./benchmark.ts";
import { type Cluster, startCluster } from "./steward-cluster.ts";
import { type CpuSeconds, freePort, metricIn, processCpuSeconds, waitForHealth } from "./steward-process.ts";
import { COLD, CONCURRENT, CONCURRENT_WARM_UP } from "./submit.ts";
import { XARGS_PARALLEL, XARGS_TASKS } from "./xargs.ts";

const PG_URL = process.env.STEWARD_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const SEQUENTIAL = 500;
const CLIENTS = 8;
/**
 * Clients of the second timed run: each client waits for its answer, so 8 of them wait on the
 * store's commits in turn and their rate is bound by its latency; 32 show what the broker takes
 * when that is not the bound.
 */
const MANY_CLIENTS = 32;
const TASKS = XARGS_TASKS;
const SLOTS = XARGS_PARALLEL;
/** Failover runs (`STEWARD_BENCH_PG_FAILOVERS`, 0 for none: the throughput figures alone). */
const FAILOVERS = Number(process.env.STEWARD_BENCH_PG_FAILOVERS ?? 5);
const STEWARD = join(REPOSITORY, "bin", "steward");
const NEVER = 'host.name == "nowhere"';

async function onPostgres<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A store URL on a fresh schema, and the function that drops it. */
function freshStore(label: string): { url: string; drop: () => Promise<void> } {
  const schema = `steward_bench_${label}_${Math.random().toString(36).slice(2, 8)}`;
  const url = new URL(PG_URL);
  url.searchParams.set("schema", schema);
  return {
    url: url.toString(),
    drop: () =>
      onPostgres(
        async (client) =>
          void (await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`)),
      ),
  };
}

/** CPU seconds (user + system) of the database's processes: every process named `postgres`. */
function databaseCpuSeconds(): number {
  let total = 0;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/comm`, "utf8").trim() !== "postgres") continue;
    } catch {
      continue;
    }
    const cpu = processCpuSeconds(Number(name));
    if (cpu) total += cpu.user + cpu.system;
  }
  return total;
}

/** What the store's metrics say so far: its commits, and the sums of its commit histograms. */
interface StoreTotals {
  commits: number;
  commitSeconds: number;
  commitSteps: number;
}

/** The store's totals from one scrape of the server's /metrics, or null when one is missing. */
async function storeTotals(cluster: Cluster): Promise<StoreTotals | null> {
  const text = await cluster.api.metrics();
  const [commits, commitSeconds, commitSteps] = [
    "steward_store_commits",
    "steward_store_commit_seconds_sum",
    "steward_store_commit_steps_sum",
  ].map((name) => metricIn(text, name));
  return commits === null || commitSeconds === null || commitSteps === null
    ? null
    : { commits, commitSeconds, commitSteps };
}

/** What the broker (the server process), the database and the store did over some work of `units`. */
class CostMeter {
  readonly #cluster: Cluster;
  readonly #broker: CpuSeconds | null;
  readonly #database: number;
  readonly #store: StoreTotals | null;

  private constructor(
    cluster: Cluster,
    broker: CpuSeconds | null,
    database: number,
    store: StoreTotals | null,
  ) {
    this.#cluster = cluster;
    this.#broker = broker;
    this.#database = database;
    this.#store = store;
  }

  static async start(cluster: Cluster): Promise<CostMeter> {
    const store = await storeTotals(cluster);
    return new CostMeter(cluster, processCpuSeconds(cluster.serverPid), databaseCpuSeconds(), store);
  }

  /**
   * Per unit: the broker's CPU, the database's CPU (ms) and the store's commits; and per commit
   * meanwhile, the time it took to be durable as the broker saw it (ms) and the steps it answered.
   */
  async per(units: number) {
    const broker = processCpuSeconds(this.#cluster.serverPid);
    const database = databaseCpuSeconds();
    const store = await storeTotals(this.#cluster);
    const before = this.#store;
    const made = store && before ? store.commits - before.commits : 0;
    return {
      brokerCpuMs:
        broker && this.#broker
          ? round(((broker.user + broker.system - this.#broker.user - this.#broker.system) * 1000) / units, 3)
          : null,
      databaseCpuMs: round(((database - this.#database) * 1000) / units, 3),
      storeCommits: store && before ? round(made / units, 3) : null,
      commitMs:
        store && before && made > 0
          ? round(((store.commitSeconds - before.commitSeconds) * 1000) / made, 3)
          : null,
      stepsPerCommit:
        store && before && made > 0 ? round((store.commitSteps - before.commitSteps) / made, 2) : null,
    };
  }
}

async function submitRate(cluster: Cluster, total: number, clients: number) {
  const meter = await CostMeter.start(cluster);
  let next = 0;
  const client = async () => {
    while (next < total) {
      next++;
      await cluster.api.submit({ name: "bench-pg", command: "true", requirements: NEVER });
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: clients }, client));
  const perSecond = round(total / (since(start) / 1000));
  return { perSecond, perRequest: await meter.per(total) };
}

async function submitThroughput(options: BenchOptions, progress: (message: string) => void) {
  const store = freshStore("submit");
  const cluster = await startCluster({
    label: "pg-submit",
    agents: 0,
    slots: 1,
    serverArgs: ["--store", store.url],
    cpuProf: options.cpuProf,
    keep: options.keep,
  });
  try {
    await submitRate(cluster, 50, 1);
    const sequential = await submitRate(cluster, SEQUENTIAL, 1);
    const cold = await submitRate(cluster, COLD, CLIENTS);
    await submitRate(cluster, CONCURRENT_WARM_UP, CLIENTS);
    const concurrent = await submitRate(cluster, CONCURRENT, CLIENTS);
    const many = await submitRate(cluster, CONCURRENT, MANY_CLIENTS);
    const { perRequest } = concurrent;
    progress(
      `postgres: submit sequential ${sequential.perSecond}/s, ${CLIENTS} clients ${concurrent.perSecond}/s ` +
        `over ${CONCURRENT} after ${COLD + CONCURRENT_WARM_UP} (${CLIENTS} clients, a request: broker ` +
        `${perRequest.brokerCpuMs} ms CPU, database ${perRequest.databaseCpuMs} ms CPU, ` +
        `${perRequest.storeCommits} commits, each durable in ${perRequest.commitMs} ms answering ` +
        `${perRequest.stepsPerCommit} steps); the first ${COLD} from ${CLIENTS} clients ` +
        `${cold.perSecond}/s (broker ${cold.perRequest.brokerCpuMs} ms CPU a request); ${MANY_CLIENTS} clients ` +
        `${many.perSecond}/s (broker ${many.perRequest.brokerCpuMs} ms CPU a request, commits durable in ` +
        `${many.perRequest.commitMs} ms answering ${many.perRequest.stepsPerCommit} steps)`,
    );
    return {
      sequential: sequential.perSecond,
      concurrent8: concurrent.perSecond,
      concurrent8Cold: cold.perSecond,
      concurrent32: many.perSecond,
      perRequest: {
        sequential: sequential.perRequest,
        concurrent8: concurrent.perRequest,
        concurrent8Cold: cold.perRequest,
        concurrent32: many.perRequest,
      },
    };
  } finally {
    await cluster.stop();
    await store.drop();
  }
}

async function endToEnd(options: BenchOptions, xargsRate: unknown, progress: (message: string) => void) {
  const store = freshStore("e2e");
  const cluster = await startCluster({
    label: "pg-e2e",
    agents: 1,
    slots: SLOTS,
    serverArgs: ["--store", store.url],
    cpuProf: options.cpuProf,
    keep: options.keep,
  });
  try {
    await cluster.waitForHosts();
    const meter = await CostMeter.start(cluster);
    const agentPid = cluster.agents[0].pid;
    const agentBefore = processCpuSeconds(agentPid);
    const start = performance.now();
    const id = await cluster.api.submit({ name: "bench-pg-e2e", command: ["true"], array: { count: TASKS } });
    for (;;) {
      const job = await cluster.api.job(id);
      if (job.state === "succeeded") break;
      if (job.state === "failed" || job.state === "cancelled") throw new Error(`job ${id} ${job.state}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const seconds = since(start) / 1000;
    const tasksPerSecond = TASKS / seconds;
    const agentAfter = processCpuSeconds(agentPid);
    const perTask = {
      ...(await meter.per(TASKS)),
      // The agent's own CPU, and that of the processes it reaped (those it waited for), a task.
      agentCpuMs:
        agentBefore && agentAfter
          ? round(
              ((agentAfter.user + agentAfter.system - agentBefore.user - agentBefore.system) * 1000) / TASKS,
              3,
            )
          : null,
      agentReapedCpuMs:
        agentBefore && agentAfter
          ? round(((agentAfter.children - agentBefore.children) * 1000) / TASKS, 3)
          : null,
    };
    const fractionOfXargs = typeof xargsRate === "number" ? round(tasksPerSecond / xargsRate, 4) : null;
    progress(
      `postgres: end-to-end ${TASKS} tasks in ${round(seconds, 3)} s (${round(tasksPerSecond)}/s, ` +
        `${fractionOfXargs ?? "?"} of xargs; a task: broker ${perTask.brokerCpuMs} ms CPU, ` +
        `database ${perTask.databaseCpuMs} ms CPU, agent ${perTask.agentCpuMs} ms CPU, ${perTask.storeCommits} commits)`,
    );
    return {
      tasks: TASKS,
      slots: SLOTS,
      seconds: round(seconds, 3),
      tasksPerSecond: round(tasksPerSecond),
      fractionOfXargs,
      perTask,
    };
  } finally {
    await cluster.stop();
    await store.drop();
  }
}

/** One failover: two brokers, kill -9 of the leader, time to the first submit the other accepts. */
async function failover(): Promise<number> {
  const store = freshStore("failover");
  const data = mkdtempSync(join(tmpdir(), "steward-bench-failover-"));
  const ports = [await freePort(), await freePort()];
  const urls = ports.map((port) => `http://127.0.0.1:${port}`);
  const brokers = ports.map((port) =>
    spawn(
      STEWARD,
      ["server", "--data", data, "--port", String(port), "--store", store.url, "--lease-seconds", "2"],
      {
        stdio: "ignore",
      },
    ),
  );
  try {
    await waitForHealth(urls[0], "broker 1", () => null);
    await waitForHealth(urls[1], "broker 2", () => null);
    const token = readFileSync(join(data, "admin-token"), "utf8").trim();
    const roles = await Promise.all(
      urls.map(async (url) => ((await (await fetch(`${url}/healthz`)).json()) as { role: string }).role),
    );
    const leader = roles.indexOf("leader");
    if (leader < 0) throw new Error("no leader among the two brokers");
    const standby = new Api(urls[1 - leader], token);
    const killedAt = performance.now();
    brokers[leader].kill("SIGKILL");
    for (;;) {
      try {
        await standby.submit({ name: "bench-failover", command: "true", requirements: NEVER });
        return since(killedAt) / 1000;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      if (since(killedAt) > 30_000) throw new Error("no submit accepted within 30 s of the failover");
    }
  } finally {
    for (const broker of brokers) broker.kill("SIGKILL");
    rmSync(data, { recursive: true, force: true });
    await store.drop();
  }
}

export const postgresBenchmark: Benchmark = {
  name: "postgres",
  description: `on PostgreSQL: submit and ${TASKS}-task end-to-end throughput (and its fraction of xargs's), and failover of two brokers (kill -9 to the first accepted submit, median of ${FAILOVERS})`,
  needs: ["xargs"],
  async run({ options, results, progress }) {
    try {
      await onPostgres((client) => client.query("SELECT 1"));
    } catch (error) {
      progress(`postgres: no server at ${PG_URL} (${(error as Error).message}); skipped`);
      return { postgres: { skipped: (error as Error).message } };
    }
    const submit = await submitThroughput(options, progress);
    const e2e = await endToEnd(options, figure(results, "raw.xargsTasksPerSecond"), progress);
    const runs: number[] = [];
    for (let i = 0; i < FAILOVERS; i++) {
      runs.push(await failover());
      progress(
        `postgres: failover ${i + 1}: first submit accepted ${round(runs[i], 3)} s after kill -9 of the leader`,
      );
    }
    return {
      postgres: {
        submit,
        endToEnd: e2e,
        failoverSeconds:
          runs.length === 0
            ? null
            : { median: round(median(runs), 3), runs: runs.map((each) => round(each, 3)) },
      },
    };
  },
};
