// postgres: the broker on PostgreSQL (STEWARD_TEST_PG_URL, a fresh schema each time): submit
// throughput and 2,000-task end-to-end throughput beside the SQLite figures of `submit` and
// `end-to-end`, and the failover time of two brokers on one database: from kill -9 of the leader to
// the first submit the other accepts (median of 5).

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { Api } from "./api.ts";
import { type Benchmark, median, REPOSITORY, round, since } from "./benchmark.ts";
import { startCluster } from "./steward-cluster.ts";
import { freePort, waitForHealth } from "./steward-process.ts";

const PG_URL = process.env.STEWARD_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const SEQUENTIAL = 500;
const CLIENTS = 8;
const CONCURRENT = 1000;
const TASKS = 2000;
const SLOTS = 4;
const FAILOVERS = 5;
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

async function submitRate(api: Api, total: number, clients: number): Promise<number> {
  let next = 0;
  const client = async () => {
    while (next < total) {
      next++;
      await api.submit({ name: "bench-pg", command: "true", requirements: NEVER });
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: clients }, client));
  return round(total / (since(start) / 1000));
}

async function throughput(progress: (message: string) => void) {
  const store = freshStore("submit");
  const submitCluster = await startCluster({
    label: "pg-submit",
    agents: 0,
    slots: 1,
    serverArgs: ["--store", store.url],
  });
  let submit: { sequential: number; concurrent8: number };
  try {
    await submitRate(submitCluster.api, 50, 1);
    submit = {
      sequential: await submitRate(submitCluster.api, SEQUENTIAL, 1),
      concurrent8: await submitRate(submitCluster.api, CONCURRENT, CLIENTS),
    };
    progress(
      `postgres: submit sequential ${submit.sequential}/s, ${CLIENTS} clients ${submit.concurrent8}/s`,
    );
  } finally {
    await submitCluster.stop();
    await store.drop();
  }

  const e2eStore = freshStore("e2e");
  const cluster = await startCluster({
    label: "pg-e2e",
    agents: 1,
    slots: SLOTS,
    serverArgs: ["--store", e2eStore.url],
  });
  try {
    await cluster.waitForHosts();
    const start = performance.now();
    const id = await cluster.api.submit({ name: "bench-pg-e2e", command: ["true"], array: { count: TASKS } });
    for (;;) {
      const job = await cluster.api.job(id);
      if (job.state === "succeeded") break;
      if (job.state === "failed" || job.state === "cancelled") throw new Error(`job ${id} ${job.state}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const seconds = since(start) / 1000;
    const endToEnd = {
      tasks: TASKS,
      slots: SLOTS,
      seconds: round(seconds, 3),
      tasksPerSecond: round(TASKS / seconds),
    };
    progress(`postgres: end-to-end ${TASKS} tasks in ${endToEnd.seconds} s (${endToEnd.tasksPerSecond}/s)`);
    return { submit, endToEnd };
  } finally {
    await cluster.stop();
    await e2eStore.drop();
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
  description: `on PostgreSQL: submit and ${TASKS}-task end-to-end throughput, and failover of two brokers (kill -9 to the first accepted submit, median of ${FAILOVERS})`,
  async run({ progress }) {
    try {
      await onPostgres((client) => client.query("SELECT 1"));
    } catch (error) {
      progress(`postgres: no server at ${PG_URL} (${(error as Error).message}); skipped`);
      return { postgres: { skipped: (error as Error).message } };
    }
    const { submit, endToEnd } = await throughput(progress);
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
        endToEnd,
        failoverSeconds: { median: round(median(runs), 3), runs: runs.map((each) => round(each, 3)) },
      },
    };
  },
};
