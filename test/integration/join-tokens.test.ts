// Join tokens per pool, host credentials and revocation, with real agents: a join token lets
// agents into its pool only; a joined host gets a credential (0600 in its work folder) and a join
// token alone cannot take its name over; a revoked join token's agents are disconnected within one
// heartbeat and refused when they come back.

import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Host } from "../../src/common/api/hosts.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
} from "../helpers/steward.ts";

type TokenRow = { kind: string; user: string; state: string };

let server: StewardProcess & { joinToken: string };
const agents: AgentProcess[] = [];
let gpuToken: string;
let gpuTokenId: string;

async function hosts(): Promise<Host[]> {
  return (await api(server, "GET", "/api/v1/hosts")) as Host[];
}

async function agent(name: string, token: string, pool: string, work?: string): Promise<AgentProcess> {
  const started = await startAgentProcess({
    name,
    servers: [server.url],
    joinToken: token,
    work,
    args: ["--pool", pool],
  });
  agents.push(started);
  return started;
}

function exited(agent: AgentProcess): Promise<number | null> {
  return new Promise((done) => {
    if (agent.child.exitCode !== null) return done(agent.child.exitCode);
    agent.child.once("exit", (code) => done(code));
  });
}

beforeAll(async () => {
  server = await startServerProcess({ heartbeatSeconds: 1 });
  const made = await cli(server, ["join-token", "create", "--pool", "gpu", "--json"]);
  expect(made.code, made.stderr).toBe(0);
  const parsed = JSON.parse(made.stdout) as { id: string; token: string; pool: string };
  expect(parsed.pool).toBe("gpu");
  gpuToken = parsed.token;
  gpuTokenId = parsed.id;
}, 60_000);

afterAll(async () => {
  for (const each of agents) await each.crash();
  await server?.stop();
  cleanup(server?.data ?? "", ...agents.map((each) => each.work));
});

it("a pool's join token lets agents into that pool and no other", async () => {
  const g1 = await agent("g1", gpuToken, "gpu");
  await waitFor(
    "g1 to join",
    async () => (await hosts()).some((h) => h.name === "g1" && h.connected),
    15_000,
    100,
  );
  // The server counts the host joined before its agent has written the credential down.
  const credential = join(g1.work, "host-credential");
  await waitFor("the host credential kept", () => existsSync(credential), 5_000, 20);
  expect(statSync(credential).mode & 0o777).toBe(0o600);

  const wrongPool = await agent("c1", gpuToken, "cpu");
  expect(await exited(wrongPool)).toBe(3);
  expect(wrongPool.output()).toContain("the join token is for pool gpu, not cpu");
  expect((await hosts()).some((h) => h.name === "c1")).toBe(false);
});

it("a join token alone cannot take over a host that has joined: the host credential is needed", async () => {
  // The server's own join token, a new work folder (no credential), the name of a joined host.
  const impostor = await agent("g1", server.joinToken, "gpu");
  expect(await exited(impostor)).toBe(3);
  expect(impostor.output()).toContain("host g1 has joined before and must present its host credential");
  expect((await hosts()).find((h) => h.name === "g1")?.connected).toBe(true);

  // The real g1, restarted with its work folder, comes back with its credential.
  const g1 = agents[0];
  await g1.kill9();
  await agent("g1", gpuToken, "gpu", g1.work);
  await waitFor(
    "g1 to rejoin",
    async () => (await hosts()).find((h) => h.name === "g1")?.connected === true,
    15_000,
    100,
  );
});

it("a revoked join token's agent is disconnected within one heartbeat and its reconnect is refused", async () => {
  const g1 = agents[agents.length - 1];
  const listed = await cli(server, ["token", "list", "--json"]);
  const credentials = (JSON.parse(listed.stdout) as TokenRow[]).filter(
    (t) => t.kind === "host" && t.user === "g1",
  );
  expect(credentials.map((t) => t.state)).toEqual(["active"]);

  const revoked = await cli(server, ["join-token", "revoke", gpuTokenId]);
  expect(revoked.stdout).toBe(`join token ${gpuTokenId}: revoked\n`);
  const answeredAt = Date.now();
  await waitFor(
    "g1 to be disconnected",
    async () => (await hosts()).find((h) => h.name === "g1")?.connected === false,
    5_000,
    20,
  );
  const disconnectedAfter = Date.now() - answeredAt;
  console.log(`join token revoked: its agent disconnected ${disconnectedAfter} ms later (heartbeat 1 s)`);
  expect(disconnectedAfter).toBeLessThan(1000);

  expect(await exited(g1)).toBe(3);
  expect(g1.output()).toContain("was revoked");
  const after = JSON.parse((await cli(server, ["token", "list", "--json"])).stdout) as TokenRow[];
  expect(after.filter((t) => t.kind === "host" && t.user === "g1").map((t) => t.state)).toEqual(["revoked"]);
  // A new agent with the revoked join token is refused too.
  const late = await agent("g9", gpuToken, "gpu");
  expect(await exited(late)).toBe(3);
  expect(late.output()).toContain(`join token ${gpuTokenId} was revoked`);
});
