// `steward server --store postgres://...` end to end: the records go to PostgreSQL (a fresh schema,
// chosen with the URL's ?schema=), the data folder keeps only files and tokens; a job run by a real
// agent is still there, succeeded, after kill -9 of the server and a restart on the same store.

import { existsSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, expect, it, test } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const PG_URL = process.env.STEWARD_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const SAFE_URL = PG_URL.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");

async function onPostgres<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

let unreachable: string | null = null;
try {
  await onPostgres((client) => client.query("SELECT 1"));
} catch (error) {
  unreachable = (error as Error).message || String(error);
}

const servers: StewardProcess[] = [];
const agents: AgentProcess[] = [];
const schemas: string[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) {
    await agent.crash();
    cleanup(agent.work);
  }
  for (const server of servers.splice(0)) {
    await server.stop();
    cleanup(server.data);
  }
  for (const schema of schemas.splice(0)) {
    await onPostgres((client) =>
      client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`),
    );
  }
});

if (unreachable && process.env.CI) {
  test(`PostgreSQL at ${SAFE_URL} is reachable`, () => {
    throw new Error(`cannot reach PostgreSQL at ${SAFE_URL} (STEWARD_TEST_PG_URL): ${unreachable}`);
  });
} else if (unreachable) {
  console.warn(
    `skipping steward server on PostgreSQL: cannot reach ${SAFE_URL} (set STEWARD_TEST_PG_URL): ${unreachable}`,
  );
  test.skip(`steward server on PostgreSQL: no server at ${SAFE_URL} (set STEWARD_TEST_PG_URL)`, () => {});
} else {
  it("runs a job with the records in PostgreSQL, and keeps it across kill -9 of the server", async () => {
    const schema = `steward_it_${Math.random().toString(36).slice(2, 10)}`;
    schemas.push(schema);
    const url = new URL(PG_URL);
    url.searchParams.set("schema", schema);
    const store = ["--store", url.toString()];

    const first = await startServerProcess({ args: store });
    servers.push(first);
    // The data folder holds tokens (and files), not the records.
    expect(existsSync(join(first.data, "steward.db"))).toBe(false);
    expect(first.output()).not.toMatch(/not available/);

    agents.push(await startAgentProcess({ name: "pg-1", servers: [first.url], joinToken: first.joinToken }));
    await waitFor("the agent", async () => (await api(first, "GET", "/api/v1/hosts")).length === 1);
    const { id } = await api(first, "POST", "/api/v1/jobs", {
      name: "on-postgres",
      command: "echo $STEWARD_ATTEMPT > out",
      outputs: ["out"],
    });
    const ended = await waitForJobEnd(first, id, 60_000);
    expect(ended.state).toBe("succeeded");
    expect(ended.tasks[0].attempts).toHaveLength(1);
    expect(ended.tasks[0].attempts[0]).toMatchObject({
      number: 1,
      host: "pg-1",
      outcome: "succeeded",
      exitCode: 0,
    });

    // The rows are in the schema of the URL.
    const rows = await onPostgres(async (client) => {
      const result = await client.query(
        `SELECT id, state FROM ${pg.escapeIdentifier(schema)}.jobs WHERE id = $1`,
        [id],
      );
      return result.rows;
    });
    expect(rows).toStrictEqual([{ id, state: "succeeded" }]);

    await first.kill9();
    const second = await startServerProcess({ data: first.data, port: first.port, args: store });
    servers.push(second);
    const after = await getJob(second, id);
    expect(after).toMatchObject({ id, name: "on-postgres", state: "succeeded", counts: { succeeded: 1 } });
    expect(after.tasks[0].attempts).toHaveLength(1);
    expect(after.tasks[0].attempts[0]).toMatchObject({ number: 1, host: "pg-1", outcome: "succeeded" });
    expect(after.events.map((event) => event.kind)).toContain("submitted");

    // The restarted server goes on taking work: the agent comes back to it.
    await waitFor("the agent back", async () => {
      const hosts = (await api(second, "GET", "/api/v1/hosts")) as { name: string; connected: boolean }[];
      return hosts.some((host) => host.name === "pg-1" && host.connected);
    });
    const { id: next } = await api(second, "POST", "/api/v1/jobs", { command: "true" });
    expect((await waitForJobEnd(second, next, 60_000)).state).toBe("succeeded");
  }, 120_000);
}
