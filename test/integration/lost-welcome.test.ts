// A welcome lost with its server: a joining agent makes its host credential and keeps it before
// its first hello, which proposes it, so a server that stops between the hello and the welcome
// takes nothing with it. Here a stand-in takes the hello and hangs up (the server gone before its
// welcome), then the real server comes back on that address; the agent joins with the credential
// it proposed the first time, and the server keeps that one. (A server that had committed the
// credential before stopping lets the agent in by it: test/unit/broker/server/proposed-credential.test.ts.)

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import type { Host } from "../../src/common/api/hosts.ts";
import type { HelloMessage } from "../../src/common/protocol/messages.ts";
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

let server: StewardProcess | undefined;
let agent: AgentProcess | undefined;

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "");
});

it("an agent whose welcome was lost joins with the credential it proposed, and the server keeps that one", async () => {
  // The real server's data folder, port and join token; stopped while the stand-in answers.
  const first = await startServerProcess();
  server = first;
  await first.stop();

  const standIn = new WebSocketServer({ host: "127.0.0.1", port: first.port });
  const hello = new Promise<HelloMessage>((resolve) =>
    standIn.on("connection", (ws) =>
      ws.once("message", (data) => {
        resolve(JSON.parse(String(data)) as HelloMessage);
        ws.terminate();
      }),
    ),
  );
  agent = await startAgentProcess({ name: "w1", servers: [first.url], joinToken: first.joinToken });
  const said = await hello;
  await new Promise<void>((done) => {
    for (const client of standIn.clients) client.terminate();
    standIn.close(() => done());
  });
  expect(said.token).toBe(first.joinToken);
  expect(said.credential).toMatch(/^sth_[0-9a-f]{10}_[0-9a-f]{48}$/);
  const proposed = said.credential ?? "";
  expect(readFileSync(join(agent.work, "host-credential"), "utf8").trim()).toBe(proposed);

  server = await startServerProcess({ data: first.data, port: first.port });
  const back = server;
  await waitFor(
    "w1 to join the real server",
    async () =>
      ((await api(back, "GET", "/api/v1/hosts")) as Host[]).some((h) => h.name === "w1" && h.connected),
    20_000,
    100,
  );
  const listed = await cli(back, ["token", "list", "--json"]);
  const credentials = (
    JSON.parse(listed.stdout) as { id: string; kind: string; user: string; state: string }[]
  ).filter((token) => token.kind === "host" && token.user === "w1");
  expect(credentials.map((token) => [token.id, token.state])).toStrictEqual([
    [proposed.split("_")[1], "active"],
  ]);
  expect(readFileSync(join(agent.work, "host-credential"), "utf8").trim()).toBe(proposed);
}, 60_000);
