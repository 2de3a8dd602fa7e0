// Users, roles and ownership through the real CLI and API: two users and an admin each see what
// they own; a reader reads and changes nothing; revoked and expired tokens are refused at once.

import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobSummary } from "../../src/common/api/jobs.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  openEventStream,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;
const dir = tempDir("steward-users-");
const as = (token: string) => ({ url: server.url, token });
let alice: string;
let bob: string;
let reader: string;
let aliceJob: string;
let bobJob: string;

async function makeToken(user: string, role: string, expires?: string): Promise<string> {
  const result = await cli(server, [
    "token",
    "create",
    "--user",
    user,
    "--role",
    role,
    ...(expires ? ["--expires", expires] : []),
  ]);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toContain(`token for ${user} (${role})`);
  return result.stdout.trim();
}

async function submit(token: string, name: string, command: string): Promise<string> {
  const job = (await api(as(token), "POST", "/api/v1/jobs", { name, command })) as { id: string };
  return job.id;
}

async function status(token: string, method: string, path: string, body?: unknown): Promise<number> {
  const response = await fetch(server.url + path, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

beforeAll(async () => {
  // Each stage has its own deadline inside the hook's, so a slow one says which it was and what
  // the server and the agent said meanwhile.
  let stage = "starting the server";
  try {
    server = await startServerProcess();
    stage = "starting the agent";
    agent = await startAgentProcess({
      name: "u1",
      servers: [server.url],
      joinToken: server.joinToken,
      slots: 4,
    });
    stage = "the agent joining";
    await waitFor(
      "the agent to join",
      async () =>
        ((await api(server, "GET", "/api/v1/hosts")) as { connected: boolean }[]).some((h) => h.connected),
      30_000,
      100,
    );
    stage = "making tokens";
    alice = await makeToken("alice", "user");
    bob = await makeToken("bob", "user");
    reader = await makeToken("rita", "reader");
    stage = "submitting";
    aliceJob = await submit(alice, "alices", "echo from-alice; sleep 30");
    bobJob = await submit(bob, "bobs", "echo from-bob");
    stage = "bob's job ending";
    await waitForJobEnd(server, bobJob, 30_000);
  } catch (error) {
    const tail = (text: string) => text.split("\n").slice(-25).join("\n");
    throw new Error(
      `users test set-up failed while ${stage}: ${error}\n--- server:\n${tail(server?.output() ?? "")}\n--- agent:\n${tail(agent?.output() ?? "")}`,
    );
  }
}, 120_000);

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(dir, server?.data ?? "", agent?.work ?? "");
});

describe("ownership", () => {
  it("a job's owner is the user of the token that submitted it, whatever the client claims", async () => {
    const response = await fetch(`${server.url}/api/v1/jobs`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${alice}`,
        "content-type": "application/json",
        "x-steward-user": "bob",
      },
      body: JSON.stringify({ name: "claims-bob", command: "true" }),
    });
    expect(response.status).toBe(201);
    const job = (await response.json()) as { id: string; owner: string };
    expect(job.owner).toBe("alice");
    expect(((await api(server, "GET", `/api/v1/jobs/${aliceJob}`)) as { owner: string }).owner).toBe("alice");
    expect(((await api(server, "GET", `/api/v1/jobs/${bobJob}`)) as { owner: string }).owner).toBe("bob");
  });

  it("each user sees only their own jobs in ps; the admin sees both and can filter by --user", async () => {
    const aliceSees = await cli(as(alice), ["ps", "--all", "--json"]);
    const bobSees = await cli(as(bob), ["ps", "--all", "--json"]);
    const adminSees = await cli(server, ["ps", "--all", "--json"]);
    const owners = (result: { stdout: string }) =>
      [...new Set((JSON.parse(result.stdout) as JobSummary[]).map((job) => job.owner))].sort();
    expect(owners(aliceSees)).toEqual(["alice"]);
    expect(owners(bobSees)).toEqual(["bob"]);
    expect(owners(adminSees)).toEqual(["alice", "bob"]);
    const onlyBob = await cli(server, ["ps", "--all", "--user", "bob", "--json"]);
    expect(owners(onlyBob)).toEqual(["bob"]);
    // A user asking for another's jobs still gets only their own.
    expect(owners(await cli(as(alice), ["ps", "--all", "--user", "bob", "--json"]))).toEqual(["alice"]);
  });

  it("another user's job answers 404 for show, cancel, logs and fetch, as if absent", async () => {
    for (const args of [
      ["show", bobJob],
      ["cancel", bobJob],
      ["logs", bobJob],
      ["fetch", bobJob, "--to", dir],
    ]) {
      const result = await cli(as(alice), args);
      expect(result.code, `${args.join(" ")}: ${result.stdout}${result.stderr}`).not.toBe(0);
      expect(result.stderr).toContain(`no job ${bobJob}`);
    }
    for (const [method, path] of [
      ["GET", `/api/v1/jobs/${bobJob}`],
      ["POST", `/api/v1/jobs/${bobJob}/cancel`],
      ["GET", `/api/v1/jobs/${bobJob}/logs`],
      ["GET", `/api/v1/jobs/${bobJob}/outputs`],
      ["GET", `/api/v1/jobs/${bobJob}/explain`],
      ["DELETE", `/api/v1/jobs/${bobJob}`],
    ] as const)
      expect(await status(alice, method, path), `${method} ${path}`).toBe(404);
    // Bob still reads his own; the admin reads both.
    expect((await cli(as(bob), ["logs", bobJob])).stdout).toContain("from-bob");
    expect((await cli(server, ["logs", bobJob])).stdout).toContain("from-bob");
  });

  it("a user's event stream carries only their own jobs' events, stored and live", async () => {
    const stream = await openEventStream(as(bob), { query: "after=0" });
    const adminStream = await openEventStream(server, { query: "after=0" });
    try {
      const live = await submit(bob, "bobs-live", "true");
      await api(as(alice), "POST", "/api/v1/jobs", { name: "alices-live", command: "true" });
      await stream.until("bob's live job to end", (got) =>
        got.some((e) => e.jobId === live && e.message.includes("succeeded")),
      );
      await adminStream.until("both live jobs", (got) => new Set(got.map((e) => e.jobId)).size >= 4);
      const seen = new Set(stream.received.map((event) => event.jobId));
      expect(seen.has(bobJob) && seen.has(live)).toBe(true);
      expect(seen.has(aliceJob)).toBe(false);
      const owners = await Promise.all(
        [...seen].map(
          async (id) => ((await api(server, "GET", `/api/v1/jobs/${id}`)) as { owner: string }).owner,
        ),
      );
      expect(new Set(owners)).toEqual(new Set(["bob"]));
    } finally {
      stream.close();
      adminStream.close();
    }
  });

  it("the events of a job say who changed it", async () => {
    const result = await cli(as(alice), ["cancel", aliceJob]);
    expect(result.code, result.stderr).toBe(0);
    const job = (await api(server, "GET", `/api/v1/jobs/${aliceJob}`)) as { events: { message: string }[] };
    expect(job.events.map((event) => event.message)).toContain("cancel requested by alice");
  });

  it("whoami names the user and role", async () => {
    expect((await cli(as(alice), ["whoami"])).stdout).toMatch(/^alice \(user\), token [0-9a-f]{10}\n$/);
    expect((await cli(server, ["whoami"])).stdout).toBe(
      "admin (admin), the admin token given at server start\n",
    );
  });
});

describe("roles", () => {
  it("a reader lists every job and host, and any change answers 403", async () => {
    const listed = JSON.parse((await cli(as(reader), ["ps", "--all", "--json"])).stdout) as JobSummary[];
    expect(new Set(listed.map((job) => job.owner))).toEqual(new Set(["alice", "bob"]));
    expect(await status(reader, "GET", `/api/v1/jobs/${bobJob}`)).toBe(200);
    expect(await status(reader, "GET", "/api/v1/hosts")).toBe(200);
    expect(await status(reader, "POST", "/api/v1/jobs", { name: "r", command: "true" })).toBe(403);
    expect(await status(reader, "POST", `/api/v1/jobs/${bobJob}/cancel`)).toBe(403);
    expect(await status(reader, "POST", "/api/v1/hosts/u1/drain")).toBe(403);
    const refused = await cli(as(reader), ["cancel", aliceJob]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("a reader may read but not change anything");
  });

  it("users see hosts but may not drain them or manage tokens", async () => {
    expect(await status(alice, "GET", "/api/v1/hosts")).toBe(200);
    expect(await status(alice, "POST", "/api/v1/hosts/u1/drain")).toBe(403);
    const made = await cli(as(alice), ["token", "create", "--user", "alice", "--role", "admin"]);
    expect(made.code).not.toBe(0);
    expect(made.stderr).toContain("only an admin may do this (your role is user)");
  });

  it("an admin can make more admins", async () => {
    const second = await makeToken("carol", "admin");
    expect((await cli(as(second), ["whoami"])).stdout).toMatch(/^carol \(admin\)/);
    expect(await status(second, "GET", "/api/v1/tokens")).toBe(200);
  });
});

describe("revocation and expiry", () => {
  it("a revoked token is refused within 1 s", async () => {
    const doomed = await makeToken("dave", "user");
    expect(await status(doomed, "GET", "/api/v1/jobs")).toBe(200);
    const id = /^sta_([0-9a-f]{10})_/.exec(doomed)?.[1] ?? "";
    const result = await cli(server, ["token", "revoke", id]);
    expect(result.stdout).toBe(`token ${id} of dave: revoked\n`);
    // From the revocation's answer to the refusal: no cache to expire, no poll.
    const answeredAt = Date.now();
    expect(await status(doomed, "GET", "/api/v1/jobs")).toBe(401);
    expect(Date.now() - answeredAt).toBeLessThan(1000);
    const refused = await cli(as(doomed), ["ps"]);
    expect(refused.stderr).toContain(`token ${id} was revoked`);
    const listed = await cli(server, ["token", "list", "--json"]);
    expect(
      (JSON.parse(listed.stdout) as { id: string; state: string }[]).find((t) => t.id === id)?.state,
    ).toBe("revoked");
  });

  it("an expired token is refused", async () => {
    const brief = await makeToken("erin", "user", "1s");
    const expiresAt = Date.now() + 1000;
    await sleep(Math.max(0, expiresAt - Date.now()) + 100);
    expect(await status(brief, "GET", "/api/v1/jobs")).toBe(401);
    expect((await cli(as(brief), ["ps"])).stderr).toMatch(/token [0-9a-f]{10} expired at /);
  });

  it("no token appears in the server's log", () => {
    // A stored token's secret is its third part; the start tokens are secrets whole.
    for (const token of [alice, bob, reader, server.token, server.joinToken])
      expect(server.output()).not.toContain(/^st[ajh]_/.test(token) ? token.split("_")[2] : token);
  });

  it("tokens are stored as hashes only", async () => {
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(`${server.data}/steward.db`, { readOnly: true });
    try {
      const rows = db.prepare("SELECT id, hash FROM tokens WHERE kind = 'api'").all() as {
        id: string;
        hash: string;
      }[];
      expect(rows.length).toBeGreaterThan(3);
      const secret = alice.split("_")[2];
      for (const row of rows) expect(row.hash).not.toContain(secret);
      const text = JSON.stringify(db.prepare("SELECT * FROM tokens").all());
      expect(text).not.toContain(secret);
    } finally {
      db.close();
    }
  });
});
