// The join token out of the process list: an agent reads it from --token-file (or
// STEWARD_JOIN_TOKEN); without any, it stops at once and says what it needs.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
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

let server: (StewardProcess & { joinToken: string }) | undefined;
const agents: AgentProcess[] = [];
const dir = tempDir("steward-token-file-");

afterAll(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(dir, server?.data ?? "", ...agents.map((agent) => agent.work));
});

it("an agent reads its join token from --token-file, which keeps it out of the process list", async () => {
  server = await startServerProcess();
  const s = server;
  const file = join(dir, "join-token");
  writeFileSync(file, `${s.joinToken}\n`, { mode: 0o600 });
  const agent = await startAgentProcess({
    name: "quiet",
    servers: [s.url],
    joinToken: "",
    args: ["--token-file", file],
  });
  agents.push(agent);
  await waitFor(
    "the agent to join",
    async () =>
      ((await api(s, "GET", "/api/v1/hosts")) as { name: string }[]).some((h) => h.name === "quiet"),
    15_000,
    200,
  );
  expect(agent.child.spawnargs.join(" ")).not.toContain(s.joinToken);
});

it("an agent without a join token stops at once and says what it needs", async () => {
  const result = await cli(null, ["agent", "--server", "http://127.0.0.1:9"], {
    env: { STEWARD_JOIN_TOKEN: "" },
  });
  expect(result.code).toBe(2);
  expect(result.stderr).toContain(
    "a join token is needed: --token-file FILE, STEWARD_JOIN_TOKEN, or --token",
  );
});
