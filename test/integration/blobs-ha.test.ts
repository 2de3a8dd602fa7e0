// Blobs every broker can reach, with real processes: two `steward server` processes on one
// PostgreSQL schema, each with its own --data folder, run one after the other. What the first
// accepted and stored (a job's input, its log, its checkpoint) the second serves: an agent of the
// second restores the checkpoint written through the first. Once with the blobs in PostgreSQL (the
// default with --store), once in a --blobs folder both mount.

import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterEach, expect, it, test } from "vitest";
import { parse, stringify } from "yaml";
import {
  dropSchema,
  freshSchema,
  onPostgres,
  postgresUnreachable,
  SAFE_PG_URL,
  urlWithSchema,
} from "../helpers/postgres.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  freePort,
  getJob,
  ROOT,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const COUNTER = parse(readFileSync(join(ROOT, "examples/counter/job.yaml"), "utf8"));

const servers: StewardProcess[] = [];
const agents: AgentProcess[] = [];
const schemas: string[] = [];
const folders: string[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) {
    await agent.crash();
    cleanup(agent.work);
  }
  for (const server of servers.splice(0)) {
    await server.stop();
    cleanup(server.data);
  }
  for (const schema of schemas.splice(0)) await dropSchema(schema);
  cleanup(...folders.splice(0));
});

/** Flags that make two brokers one cluster: the same store and the same tokens. */
function brokerFlags(schema: string, extra: string[] = []): string[] {
  const tokens = ["--token", "admin-ha-test", "--join-token", "join-ha-test"];
  return ["--store", urlWithSchema(schema), ...tokens, ...extra];
}

/** The counter of examples/counter, which also prints its input file at start. */
function counterWithInput(greeting: string): string {
  const dir = mkdtempSync(join(tmpdir(), "steward-ha-job-"));
  folders.push(dir);
  writeFileSync(join(dir, "greeting"), greeting);
  const command = (COUNTER.command as string).replace(
    "host=$STEWARD_HOST",
    'host=$STEWARD_HOST input="$(cat greeting)"',
  );
  writeFileSync(join(dir, "job.yaml"), stringify({ ...COUNTER, command, inputs: ["greeting"] }));
  return join(dir, "job.yaml");
}

async function logOf(server: StewardProcess, id: string, attempt: number): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/jobs/${id}/logs?task=0&attempt=${attempt}`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  return response.text();
}

function lastStep(log: string): number {
  const steps = [...log.matchAll(/^step (\d+)$/gm)];
  return steps.length ? Number(steps[steps.length - 1][1]) : 0;
}

async function blobKeys(schema: string): Promise<string[]> {
  return onPostgres(async (client) => {
    const result = await client.query(
      `SELECT key FROM ${pg.escapeIdentifier(schema)}.blobs WHERE dropped_at IS NULL ORDER BY key`,
    );
    return result.rows.map((row) => String(row.key));
  });
}

const unreachable = await postgresUnreachable();

if (unreachable && process.env.CI) {
  test(`PostgreSQL at ${SAFE_PG_URL} is reachable`, () => {
    throw new Error(`cannot reach PostgreSQL at ${SAFE_PG_URL} (STEWARD_TEST_PG_URL): ${unreachable}`);
  });
} else if (unreachable) {
  console.warn(
    `skipping blobs across brokers: cannot reach ${SAFE_PG_URL} (set STEWARD_TEST_PG_URL): ${unreachable}`,
  );
  test.skip(`blobs across brokers: no server at ${SAFE_PG_URL} (set STEWARD_TEST_PG_URL)`, () => {});
} else {
  it("serves through a second broker the input, log and checkpoint stored through the first (blobs in PostgreSQL)", async () => {
    const schema = freshSchema("steward_it");
    schemas.push(schema);
    const portB = await freePort();

    const a = await startServerProcess({ args: brokerFlags(schema) });
    servers.push(a);
    // The banner is written once the server is up, which may be just after /healthz first answers.
    await waitFor("the startup banner", () => /blobs: +PostgreSQL/.test(a.output()), 5000, 50);
    expect(a.output()).toMatch(/blobs: +PostgreSQL/);
    const first = await startAgentProcess({ name: "ha-1", servers: [a.url], joinToken: "join-ha-test" });
    agents.push(first);
    await waitFor("the agent on A", async () => (await api(a, "GET", "/api/v1/hosts")).length === 1);

    const submitted = await cli(a, ["submit", counterWithInput("hello from A")]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    // Far enough that a restart from scratch could not be mistaken for one from the checkpoint.
    const reached = await waitFor(
      "step 16 with a checkpoint",
      async () => {
        const step = lastStep(await logOf(a, id, 1));
        const checkpoint = (await getJob(a, id)).tasks[0].checkpoint;
        return step >= 16 && checkpoint && checkpoint.generation >= 1 ? step : null;
      },
      40_000,
      100,
    );
    const generation = (await getJob(a, id)).tasks[0].checkpoint!.generation;
    const logThroughA = await logOf(a, id, 1);
    expect(logThroughA.split("\n")[0]).toBe("start at 0 restarted=0 attempt=1 host=ha-1 input=hello from A");

    // A goes away, and the host with it; B starts on the same store with a data folder of its own.
    await a.stop();
    await first.crash();
    const b = await startServerProcess({ port: portB, args: brokerFlags(schema) });
    servers.push(b);
    expect(b.data).not.toBe(a.data);
    const second = await startAgentProcess({ name: "ha-2", servers: [b.url], joinToken: "join-ha-test" });
    agents.push(second);

    // The log written through A reads the same through B.
    expect((await logOf(b, id, 1)).startsWith(logThroughA)).toBe(true);

    const startLine = await waitFor(
      "attempt 2 started on ha-2",
      async () => (await logOf(b, id, 2)).split("\n")[0] || null,
      60_000,
      100,
    );
    const match = /^start at (\d+) restarted=1 attempt=2 host=ha-2 input=hello from A$/.exec(startLine);
    expect(match, startLine).not.toBeNull();
    const resumedFrom = Number(match![1]);
    // From the checkpoint A stored: at least the generation B knew of, never from scratch.
    expect(resumedFrom).toBeGreaterThan(0);
    expect(resumedFrom).toBeLessThanOrEqual(reached + 8);

    const ended = await waitForJobEnd(b, id, 60_000);
    expect(ended.state).toBe("succeeded");
    expect(ended.tasks[0].attempts.map((attempt) => attempt.outcome)).toStrictEqual(["lost", "succeeded"]);
    expect(ended.events.some((event) => event.message.includes("restarts from checkpoint generation"))).toBe(
      true,
    );
    expect(ended.tasks[0].checkpoint!.generation).toBeGreaterThanOrEqual(generation);
    const result = await fetch(`${b.url}/api/v1/jobs/${id}/outputs/0/result`, {
      headers: { authorization: `Bearer ${b.token}` },
    });
    expect((await result.text()).trim()).toBe("80");

    // Nothing went to either data folder: the files are rows in the store's schema.
    expect(existsSync(join(a.data, "blobs"))).toBe(false);
    expect(existsSync(join(b.data, "blobs"))).toBe(false);
    const keys = await blobKeys(schema);
    expect(keys).toContain(`jobs/${id}/inputs/greeting`);
    expect(keys.some((key) => key.startsWith(`jobs/${id}/`) && key.includes("checkpoint"))).toBe(true);
    console.log(
      `A reached step ${reached} (checkpoint generation ${generation}); B's agent resumed at ${resumedFrom}`,
    );
  }, 150_000);

  it("with --blobs DIR, both brokers keep the files in that folder, and the second serves the first's", async () => {
    const schema = freshSchema("steward_it");
    schemas.push(schema);
    const shared = tempDir("steward-shared-blobs-");
    folders.push(shared);

    const a = await startServerProcess({ args: brokerFlags(schema, ["--blobs", shared]) });
    servers.push(a);
    await waitFor("the startup banner", () => a.output().includes(`blobs:       ${shared}`), 5000, 50);
    expect(a.output()).toContain(`blobs:       ${shared}`);
    const content = randomBytes(300_000);
    const dir = mkdtempSync(join(tmpdir(), "steward-ha-job-"));
    folders.push(dir);
    writeFileSync(join(dir, "data.bin"), content);
    // The job succeeds only with the input whole: an agent of the second broker stages it.
    const sum = createHash("sha256").update(content).digest("hex");
    writeFileSync(
      join(dir, "job.yaml"),
      stringify({ command: `echo "${sum}  data.bin" | sha256sum -c -`, inputs: ["data.bin"] }),
    );
    const submitted = await cli(a, ["submit", join(dir, "job.yaml")]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    await a.stop();

    const b = await startServerProcess({ args: brokerFlags(schema, ["--blobs", shared]) });
    servers.push(b);
    expect(readFileSync(join(shared, "jobs", id, "inputs", "data.bin")).equals(content)).toBe(true);
    const agent = await startAgentProcess({ name: "ha-files", servers: [b.url], joinToken: "join-ha-test" });
    agents.push(agent);
    expect((await waitForJobEnd(b, id)).state).toBe("succeeded");
    expect(existsSync(join(a.data, "blobs"))).toBe(false);
    expect(await blobKeys(schema)).toStrictEqual([]);
  }, 60_000);
}
