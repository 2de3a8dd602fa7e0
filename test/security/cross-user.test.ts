// What one user may learn of another's jobs: nothing. A dependsOn naming another user's job is
// answered exactly as one naming no job at all, and explain tells a user how many of other users'
// jobs are ahead in the queue, never which or whose. Real server, real agent, real tokens.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;
const as = (token: string) => ({ url: server.url, token });
let alice: string;
let bob: string;
let reader: string;
/**
 * Bob's job on the agent's one slot, and his job of QoS tier `high` waiting for it (ahead of
 * alice's: a job's own priority orders its owner's jobs only, and bob, running, has the larger share).
 */
let bobRunning: string;
let bobWaiting: string;
let qosDir: string | undefined;

async function makeToken(user: string, role: string, ...more: string[]): Promise<string> {
  const result = await cli(server, ["token", "create", "--user", user, "--role", role, ...more]);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.trim();
}

async function submit(token: string, body: Record<string, unknown>): Promise<string> {
  return ((await api(as(token), "POST", "/api/v1/jobs", body)) as { id: string }).id;
}

/** POST /api/v1/jobs as `token`: the status and the whole answer, whatever they are. */
async function trySubmit(token: string, body: unknown): Promise<{ status: number; answer: unknown }> {
  const response = await fetch(`${server.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, answer: await response.json() };
}

beforeAll(async () => {
  qosDir = tempDir("steward-qos-");
  const qos = join(qosDir, "qos.yaml");
  writeFileSync(qos, "tiers: {normal: {}, high: {priority: 10}}\n");
  server = await startServerProcess({ args: ["--qos", qos] });
  agent = await startAgentProcess({
    name: "x1",
    servers: [server.url],
    joinToken: server.joinToken,
    slots: 1,
  });
  await waitFor("the agent to join", async () =>
    ((await api(server, "GET", "/api/v1/hosts")) as { connected: boolean }[]).some((host) => host.connected),
  );
  alice = await makeToken("alice", "user");
  bob = await makeToken("bob", "user", "--qos", "normal,high");
  reader = await makeToken("rita", "reader");
  bobRunning = await submit(bob, { name: "bobs-running", command: "sleep 120" });
  await waitFor("bob's job to run", async () => {
    const job = (await api(server, "GET", `/api/v1/jobs/${bobRunning}`)) as { state: string };
    return job.state === "running";
  });
  bobWaiting = await submit(bob, { name: "bobs-waiting", command: "true", qos: "high" });
}, 90_000);

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "", qosDir ?? "");
});

describe("dependsOn", () => {
  it("naming another user's job answers exactly as naming no job", async () => {
    const missing = "999999";
    const onBobs = await trySubmit(alice, { command: "true", dependsOn: [bobRunning] });
    const onNone = await trySubmit(alice, { command: "true", dependsOn: [missing] });
    expect(onNone.status).toBe(400);
    expect(onBobs.status).toBe(onNone.status);
    // The same answer, the id aside (each names the id it was given).
    expect(JSON.stringify(onBobs.answer)).toBe(JSON.stringify(onNone.answer).replaceAll(missing, bobRunning));
    // Through the CLI too: the same line and exit code.
    const dir = tempDir("steward-depends-");
    const viaCli = async (dependsOn: string) => {
      writeFileSync(join(dir, "job.json"), JSON.stringify({ command: "true", dependsOn: [dependsOn] }));
      return cli(as(alice), ["submit", join(dir, "job.json")]);
    };
    const cliOnBobs = await viaCli(bobRunning);
    const cliOnNone = await viaCli(missing);
    cleanup(dir);
    expect(cliOnNone.stderr).toContain(`no job ${missing}`);
    expect(cliOnBobs.code).toBe(cliOnNone.code);
    // The same line but for the id (only the id: a short one may also be in the folder's name).
    expect(cliOnBobs.stderr.replace(`no job ${bobRunning}`, `no job ${missing}`)).toBe(cliOnNone.stderr);
  });

  it("naming one's own job, or any job for an admin, is accepted", async () => {
    const own = await submit(alice, { command: "true" });
    const onOwn = await trySubmit(alice, { command: "true", dependsOn: [own] });
    expect(onOwn.status).toBe(201);
    const byAdmin = await trySubmit(server.token, { command: "true", dependsOn: [bobRunning] });
    expect(byAdmin.status).toBe(201);
    // Out of the queue again, so that explain below sees only the jobs it puts there.
    for (const id of [own, (onOwn.answer as { id: string }).id, (byAdmin.answer as { id: string }).id])
      await api(server, "POST", `/api/v1/jobs/${id}/cancel`, {});
  });
});

describe("explain", () => {
  it("tells a user how many of other users' jobs are ahead, not which or whose; own jobs by id", async () => {
    const aliceAhead = await submit(alice, { name: "alices-ahead", command: "true", priority: 5 });
    const aliceBehind = await submit(alice, { name: "alices-behind", command: "true" });
    const answer = (await api(as(alice), "GET", `/api/v1/jobs/${aliceBehind}/explain`)) as {
      ahead: { id: string; owner: string | null }[];
      othersAhead: number;
      reasons: string[];
    };
    const text = JSON.stringify(answer);
    expect(text).not.toContain("bob");
    expect(answer.ahead.map((job) => job.id)).toStrictEqual([aliceAhead]);
    expect(answer.othersAhead).toBe(1);
    expect(answer.reasons).toContain(
      `behind 2 jobs in the queue: ${aliceAhead} (priority 5) and 1 job of other users`,
    );
    // (The sentence above is the whole mention of the queue: bob's ids are small numbers that
    // other figures of the answer may share, so they are not looked for elsewhere.)
    const printed = await cli(as(alice), ["explain", aliceBehind]);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toContain(
      `behind 2 jobs in the queue: ${aliceAhead} (priority 5) and 1 job of other users`,
    );
    expect(printed.stdout).not.toContain("bob");

    // An admin and a reader see every job ahead, with its owner.
    for (const token of [server.token, reader]) {
      const full = (await api(as(token), "GET", `/api/v1/jobs/${aliceBehind}/explain`)) as typeof answer;
      expect(full.ahead.map((job) => [job.id, job.owner])).toStrictEqual([
        [bobWaiting, "bob"],
        [aliceAhead, "alice"],
      ]);
      expect(full.othersAhead).toBe(0);
    }
  });

  it("does not tell a user the state of another user's job their job depends on", async () => {
    // Only an admin can make such a link (on alice's behalf): alice still learns nothing of bob's job.
    const response = await fetch(`${server.url}/api/v1/jobs`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${server.token}`,
        "content-type": "application/json",
        "x-steward-user": "alice",
      },
      body: JSON.stringify({ command: "true", dependsOn: [bobRunning] }),
    });
    expect(response.status).toBe(201);
    const { id } = (await response.json()) as { id: string };
    const answer = (await api(as(alice), "GET", `/api/v1/jobs/${id}/explain`)) as { reasons: string[] };
    expect(answer.reasons.join("\n")).not.toContain("running");
    expect(answer.reasons).toContain(
      `waiting for its dependency ${bobRunning} (another user's job) to succeed`,
    );
    const full = (await api(server, "GET", `/api/v1/jobs/${id}/explain`)) as { reasons: string[] };
    expect(full.reasons).toContain(`waiting for its dependency ${bobRunning} (running) to succeed`);
  });
});
