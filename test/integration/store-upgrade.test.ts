// A data folder made by release 0.1.0 (store schema 7: test/fixtures/store-0.1.0-schema7, made with
// `steward up` running examples/hello, examples/pi, examples/retry, a job cancelled while it ran,
// a job no host can take, and a user token for alice) opens with today's server: the migrations
// since are applied at start, and every job, task, attempt, event, log, output and token is still
// there. A change of the store's schema must keep this test passing without touching the fixture.

import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { api, cleanup, ROOT, type StewardProcess, startServerProcess, tempDir } from "../helpers/steward.ts";

const FIXTURE = join(ROOT, "test/fixtures/store-0.1.0-schema7");

let server: StewardProcess;
let data: string;

beforeAll(async () => {
  data = tempDir("steward-upgrade-");
  cpSync(FIXTURE, data, { recursive: true });
  server = await startServerProcess({ data });
});

afterAll(async () => {
  await server?.stop();
  cleanup(data);
});

interface Listed {
  id: string;
  name: string;
  owner: string;
  state: string;
}

it("keeps every job with its state", async () => {
  const jobs = (await api(server, "GET", "/api/v1/jobs?all=1")) as Listed[];
  expect(jobs.map(({ id, name, owner, state }) => ({ id, name, owner, state }))).toStrictEqual([
    { id: "1", name: "wordcount", owner: "admin", state: "succeeded" },
    { id: "2", name: "pi", owner: "admin", state: "succeeded" },
    { id: "3", name: "flaky", owner: "admin", state: "succeeded" },
    { id: "4", name: "sleeper", owner: "admin", state: "cancelled" },
    { id: "5", name: "never", owner: "admin", state: "pending" },
  ]);
});

it("keeps tasks, attempts and events", async () => {
  const pi = await api(server, "GET", "/api/v1/jobs/2");
  expect(pi.tasks).toHaveLength(20);
  expect(pi.tasks.every((task: { state: string }) => task.state === "succeeded")).toBe(true);
  const flaky = await api(server, "GET", "/api/v1/jobs/3");
  const outcomes = flaky.tasks[0].attempts.map((attempt: { outcome: string }) => attempt.outcome);
  expect(outcomes).toStrictEqual(["failed", "succeeded"]);
  const sleeper = await api(server, "GET", "/api/v1/jobs/4");
  expect(sleeper.tasks[0].attempts[0].outcome).toBe("cancelled");
  expect(sleeper.events.length).toBeGreaterThan(2);
});

it("keeps logs and outputs", async () => {
  const response = await fetch(`${server.url}/api/v1/jobs/1/logs`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  expect(response.status).toBe(200);
  expect((await response.text()).length).toBeGreaterThan(0);
  const outputs = (await api(server, "GET", "/api/v1/jobs/2/outputs")) as { task: number; path: string }[];
  expect(outputs).toHaveLength(20);
  const first = await fetch(`${server.url}/api/v1/jobs/2/outputs/0/pi.txt`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  expect(first.status).toBe(200);
  expect((await first.text()).trim()).not.toBe("");
});

it("keeps the tokens: the admin token of the folder and alice's user token", async () => {
  const alice = readFileSync(join(data, "alice-token"), "utf8").trim();
  const whoami = await api({ url: server.url, token: alice }, "GET", "/api/v1/whoami");
  expect(whoami).toMatchObject({ user: "alice", role: "user" });
  // A user sees only their own jobs: alice has none.
  expect(await api({ url: server.url, token: alice }, "GET", "/api/v1/jobs?all=1")).toStrictEqual([]);
});

it("gives a new job an id after every kept one (ids are handed out in blocks)", async () => {
  const made = await api(server, "POST", "/api/v1/jobs", { command: "true" });
  expect(Number(made.id)).toBeGreaterThan(5);
});
