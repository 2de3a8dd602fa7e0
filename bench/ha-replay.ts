// What the fault benchmarks on brokers in high availability share: the database under them (a
// private PostgreSQL cluster that can really be restarted, or the shared server behind a TCP
// forwarder whose cut stands in for a restart), a trace slice submitted on schedule by a client
// that lists both brokers and carries an Idempotency-Key (so that a submit whose answer was lost
// in a fault is sent again, not doubled), and the outcome read from the store itself: every job's
// state, tasks with more than one successful attempt, and each job's completions as the job itself
// wrote them (a line appended to a file after its sleep: a run that ended twice shows twice).

import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { PG_URL } from "../test/helpers/postgres.ts";
import { PASS, RESET, startForwarder } from "../test/helpers/tcp-forwarder.ts";
import type { HaBroker } from "./ha-cluster.ts";
import type { ReplayJob } from "./lcg-slice.ts";
import { startPrivatePostgres } from "./private-postgres.ts";

export interface BenchDatabase {
  /** How a restart is made here, for the report. */
  kind: string;
  storeUrl(schema: string): string;
  /** The URL the benchmark reads the store through (never through the forwarder). */
  directUrl(schema: string): string;
  restart(downMs: number): Promise<void>;
  schemaBytes(schema: string): Promise<number>;
  dropSchema(schema: string): Promise<void>;
  stop(): Promise<void>;
}

function withSchema(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set("schema", schema);
  return parsed.toString();
}

/**
 * Runs `work` on a connection of its own. A connection the server cuts (a restart) fails the work
 * with an error, never the benchmark's process with an unhandled 'error' event.
 */
export async function onDatabase<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const parsed = new URL(url);
  parsed.searchParams.delete("schema");
  const client = new pg.Client({ connectionString: parsed.toString(), connectionTimeoutMillis: 5000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

const SCHEMA_BYTES = `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')`;

/**
 * A private cluster (real restarts) where one can be made, else (or with
 * STEWARD_BENCH_DB_RESTART=forwarder) the shared server behind a forwarder.
 */
export async function openBenchDatabase(progress: (message: string) => void): Promise<BenchDatabase> {
  const own =
    process.env.STEWARD_BENCH_DB_RESTART === "forwarder"
      ? { unavailable: "STEWARD_BENCH_DB_RESTART=forwarder" }
      : await startPrivatePostgres();
  if (!("unavailable" in own)) {
    return {
      kind: `a private PostgreSQL cluster on 127.0.0.1:${own.port}, restarted with pg_ctl stop -m immediate, down, pg_ctl start`,
      storeUrl: (schema) => withSchema(own.url, schema),
      directUrl: (schema) => withSchema(own.url, schema),
      restart: (downMs) => own.restart(downMs),
      schemaBytes: (schema) => own.schemaBytes(schema),
      dropSchema: async () => {},
      stop: async () => own.stop(),
    };
  }
  progress(
    `no private PostgreSQL (${own.unavailable}); a forwarder's cut of ${PG_URL} stands in for a restart`,
  );
  const target = new URL(PG_URL);
  const forwarder = await startForwarder({
    target: { host: target.hostname, port: Number(target.port || 5432) },
  });
  const through = new URL(PG_URL);
  through.host = `${forwarder.host}:${forwarder.port}`;
  return {
    kind: `the shared PostgreSQL behind a TCP forwarder: every connection reset and new ones refused for the outage`,
    storeUrl: (schema) => withSchema(through.toString(), schema),
    directUrl: (schema) => withSchema(PG_URL, schema),
    async restart(downMs) {
      forwarder.setMode(RESET);
      await sleep(downMs);
      forwarder.setMode(PASS);
    },
    schemaBytes: (schema) =>
      onDatabase(PG_URL, async (client) =>
        Number((await client.query(SCHEMA_BYTES, [schema])).rows[0].bytes),
      ),
    dropSchema: (schema) =>
      onDatabase(PG_URL, async (client) => {
        await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
      }),
    stop: () => forwarder.close(),
  };
}

/** The job a trace entry becomes: it sleeps its scaled run time, then says it ended. */
export function replayJobSpec(job: ReplayJob, prefix: string, runsFile: string): Record<string, unknown> {
  return {
    name: `${prefix}-${job.index}`,
    command: `sleep ${job.runSeconds} && echo "$STEWARD_JOB_ID $STEWARD_ATTEMPT" >> ${runsFile}`,
  };
}

/**
 * Submits one job as a client listing every broker does: each live broker in turn until one
 * accepts (a redirect, a refusal or no answer: the next), again every 250 ms, with the same key.
 * Returns how many rounds it took.
 */
export async function submitToAny(
  brokers: readonly HaBroker[],
  token: string,
  spec: unknown,
  key: string,
  timeoutMs = 120_000,
): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (let round = 1; ; round++) {
    for (const broker of brokers) {
      if (!broker.alive()) continue;
      try {
        const response = await fetch(`${broker.url}/api/v1/jobs`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${token}`,
            "content-type": "application/json",
            "idempotency-key": key,
          },
          body: JSON.stringify(spec),
          redirect: "manual",
          signal: AbortSignal.timeout(10_000),
        });
        await response.arrayBuffer();
        if (response.status === 201 || response.status === 200) return round;
      } catch {}
    }
    if (performance.now() > deadline)
      throw new Error(`submit ${key}: no broker accepted it in ${timeoutMs} ms`);
    await sleep(250);
  }
}

/** Submits the slice on its schedule from `startedAt` (performance.now()); returns the rounds beyond the first. */
export async function submitSlice(options: {
  jobs: readonly ReplayJob[];
  brokers: readonly HaBroker[];
  token: string;
  prefix: string;
  runsFile: string;
  startedAt: number;
  clients?: number;
}): Promise<{ retries: number }> {
  let next = 0;
  let retries = 0;
  const client = async () => {
    for (;;) {
      const job = options.jobs[next++];
      if (!job) return;
      const wait = options.startedAt + job.submitAtMs - performance.now();
      if (wait > 0) await sleep(wait);
      const spec = replayJobSpec(job, options.prefix, options.runsFile);
      retries +=
        (await submitToAny(options.brokers, options.token, spec, `${options.prefix}-${job.index}`)) - 1;
    }
  };
  await Promise.all(Array.from({ length: options.clients ?? 4 }, client));
  return { retries };
}

export interface SliceOutcome {
  jobs: number;
  states: Record<string, number>;
  /** Tasks with more than one attempt whose outcome is `succeeded` (must be 0). */
  tasksSucceededMoreThanOnce: number;
  /** Jobs that succeeded with exactly one successful attempt and ran to completion once by their own account. */
  succeededExactlyOnce: number;
  /** Jobs whose command completed more than once (lines in the runs file). */
  jobsCompletedMoreThanOnce: number;
  attemptOutcomes: Record<string, number>;
  /** The last job's end, ms since the epoch. */
  lastEndedAt: number | null;
}

const ENDED = ["succeeded", "failed", "cancelled"];

/** How many of the prefix's jobs have not ended yet, read from the store (null while it does not answer). */
export async function jobsNotEnded(url: string, schema: string, prefix: string): Promise<number | null> {
  try {
    return await onDatabase(url, async (client) => {
      const result = await client.query(
        `SELECT count(*) FILTER (WHERE state <> ALL($2)) AS n FROM ${pg.escapeIdentifier(schema)}.jobs WHERE name LIKE $1`,
        [`${prefix}-%`, ENDED],
      );
      return Number(result.rows[0].n);
    });
  } catch {
    return null;
  }
}

/** Polls the store until every one of the `count` jobs of the prefix is there and ended. */
export async function waitAllEnded(
  url: string,
  schema: string,
  prefix: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if ((await jobsNotEnded(url, schema, prefix)) === 0) return;
    await sleep(250);
  }
  throw new Error(`${prefix}: not every job ended within ${timeoutMs} ms`);
}

/** Completions by job id, from the lines the jobs appended. */
export function completionsOf(runsFile: string): Map<string, number> {
  const counts = new Map<string, number>();
  let text = "";
  try {
    text = readFileSync(runsFile, "utf8");
  } catch {}
  for (const line of text.split("\n")) {
    const id = line.split(" ")[0];
    if (id) counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

export async function sliceOutcome(
  url: string,
  schema: string,
  prefix: string,
  runsFile: string,
): Promise<SliceOutcome> {
  const s = pg.escapeIdentifier(schema);
  const like = `${prefix}-%`;
  return onDatabase(url, async (client) => {
    const states: Record<string, number> = {};
    for (const row of (
      await client.query(
        `SELECT state, count(*)::int AS n FROM ${s}.jobs WHERE name LIKE $1 GROUP BY state`,
        [like],
      )
    ).rows)
      states[row.state] = Number(row.n);
    const attemptOutcomes: Record<string, number> = {};
    for (const row of (
      await client.query(
        `SELECT coalesce(a.outcome, a.state) AS o, count(*)::int AS n FROM ${s}.attempts a JOIN ${s}.jobs j ON j.id = a.job_id WHERE j.name LIKE $1 GROUP BY 1`,
        [like],
      )
    ).rows)
      attemptOutcomes[row.o] = Number(row.n);
    const successes = (
      await client.query(
        `SELECT j.id, j.state, count(a.*) FILTER (WHERE a.outcome = 'succeeded')::int AS ok
           FROM ${s}.jobs j LEFT JOIN ${s}.attempts a ON a.job_id = j.id WHERE j.name LIKE $1 GROUP BY j.id, j.state`,
        [like],
      )
    ).rows as { id: string; state: string; ok: number }[];
    const completions = completionsOf(runsFile);
    const last = (await client.query(`SELECT max(ended_at) AS t FROM ${s}.jobs WHERE name LIKE $1`, [like]))
      .rows[0].t;
    return {
      jobs: successes.length,
      states,
      tasksSucceededMoreThanOnce: successes.filter((job) => Number(job.ok) > 1).length,
      succeededExactlyOnce: successes.filter(
        (job) => job.state === "succeeded" && Number(job.ok) === 1 && completions.get(job.id) === 1,
      ).length,
      jobsCompletedMoreThanOnce: successes.filter((job) => (completions.get(job.id) ?? 0) > 1).length,
      attemptOutcomes,
      lastEndedAt: last === null ? null : Number(last),
    };
  });
}

/** Sleeps until `at` (performance.now()), or less once `stop()` says so (looked at every 250 ms). */
export async function sleepUntil(at: number, stop: () => boolean): Promise<void> {
  for (;;) {
    const left = at - performance.now();
    if (left <= 0 || stop()) return;
    await sleep(Math.min(250, left));
  }
}
