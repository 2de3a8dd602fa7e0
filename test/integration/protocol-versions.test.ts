// Programs of different releases that speak different protocol versions are refused with a message
// naming both: an agent of another agent-protocol version (the server's reject), a server of another
// version (the agent leaves it and exits), a client of another API version (400 api_version), a
// server of another API version (the CLI refuses its answer). The other side of each is a stand-in
// speaking the other version over a real socket, since no other release of Steward is at hand;
// Steward's own side is the real server, agent or CLI.

import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { PROTOCOL_VERSION } from "../../src/common/protocol/messages.ts";
import { stewardRelease } from "../../src/common/protocol/versions.ts";
import { facts } from "../helpers/core-harness.ts";
import { rawHello } from "../helpers/raw-agent.ts";
import {
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

let server: (StewardProcess & { joinToken: string }) | undefined;
const release = stewardRelease();
const work = tempDir("steward-versions-");

beforeAll(async () => {
  server = await startServerProcess();
});

afterAll(async () => {
  await server?.stop();
  cleanup(server?.data ?? "", work);
});

it("an agent of another protocol version is rejected, the reason naming both versions and releases", async () => {
  const s = server!;
  const ws = new WebSocket(`${s.url.replace(/^http/, "ws")}/api/v1/agent/connect`);
  await once(ws, "open");
  const answer = once(ws, "message");
  const closed = once(ws, "close");
  ws.send(
    JSON.stringify({
      type: "hello",
      v: PROTOCOL_VERSION + 1,
      release: "9.0.0",
      name: "future",
      token: s.joinToken,
      pool: "default",
      slots: 1,
      labels: {},
      facts: facts("future"),
      attempts: [],
      aFieldOfTheFuture: true,
    }),
  );
  const [data] = await answer;
  const reject = JSON.parse(String(data)) as { type: string; reason: string };
  expect(reject.type).toBe("reject");
  expect(reject.reason).toBe(
    `this agent speaks agent protocol version ${PROTOCOL_VERSION + 1} (steward 9.0.0) and this server speaks version ${PROTOCOL_VERSION} (steward ${release}): run an agent of the server's release`,
  );
  const [code] = await closed;
  expect(code).toBe(1008);
  // The host was not admitted; an agent of this release still is.
  const hosts = (await (
    await fetch(`${s.url}/api/v1/hosts`, { headers: { authorization: `Bearer ${s.token}` } })
  ).json()) as { name: string }[];
  expect(hosts.map((host) => host.name)).not.toContain("future");
  const same = await rawHello(s.url, { name: "present", token: s.joinToken });
  expect(same.answer.type).toBe("welcome");
  expect(same.answer.type === "welcome" && same.answer.release).toBe(release);
  same.ws.close();
});

it("an agent welcomed by a server of another protocol version leaves, naming both, and exits 3", async () => {
  const http = createServer();
  const wss = new WebSocketServer({ server: http });
  const hellos: { v: number; release?: string }[] = [];
  wss.on("connection", (ws) => {
    ws.on("message", (data) => {
      hellos.push(JSON.parse(String(data)));
      ws.send(JSON.stringify({ type: "welcome", v: 5, release: "5.0.0", heartbeatSeconds: 1, kill: [] }));
    });
  });
  await new Promise<void>((done) => http.listen(0, "127.0.0.1", done));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  try {
    const agent = await startAgentProcess({ name: "old-agent", servers: [url], joinToken: "t", work });
    await waitFor("the agent exits", async () => agent.child.exitCode !== null, 20_000);
    expect(agent.child.exitCode).toBe(3);
    expect(hellos[0]?.v).toBe(PROTOCOL_VERSION);
    expect(hellos[0]?.release).toBe(release);
    expect(agent.output()).toContain(
      `steward agent: the Steward server at ${url} speaks agent protocol version 5 (steward 5.0.0) and this agent speaks version ${PROTOCOL_VERSION} (steward ${release}): run an agent of the server's release`,
    );
  } finally {
    wss.close();
    await closeServer(http);
  }
});

it("a client of another API version is refused with 400 api_version naming both; every answer names the server's", async () => {
  const s = server!;
  const headers = { authorization: `Bearer ${s.token}` };
  const plain = await fetch(`${s.url}/api/v1/jobs`, { headers });
  expect(plain.status).toBe(200);
  expect(plain.headers.get("steward-api-version")).toBe("1");
  expect(plain.headers.get("steward-release")).toBe(release);
  const open = await fetch(`${s.url}/healthz`);
  expect(open.headers.get("steward-api-version")).toBe("1");

  const newer = await fetch(`${s.url}/api/v1/jobs`, {
    headers: { ...headers, "steward-api-version": "2", "steward-release": "9.0.0" },
  });
  expect(newer.status).toBe(400);
  expect(await newer.json()).toEqual({
    error: {
      code: "api_version",
      message: `this client speaks Steward API version 2 (steward 9.0.0) and this server speaks API version 1 (steward ${release}): use a client of the server's release`,
    },
  });
  // A path of another version, with no token at all: the version is what is wrong.
  const path = await fetch(`${s.url}/api/v2/jobs`);
  expect(path.status).toBe(400);
  expect(((await path.json()) as { error: { message: string } }).error.message).toContain(
    "this client speaks Steward API version 2 and this server speaks API version 1",
  );
  // Nothing was created by the refused submit.
  const submit = await fetch(`${s.url}/api/v1/jobs`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", "steward-api-version": "2" },
    body: JSON.stringify({ command: "true" }),
  });
  expect(submit.status).toBe(400);
  expect(await (await fetch(`${s.url}/api/v1/jobs`, { headers })).json()).toEqual([]);
});

it("the CLI sends its version and refuses a server of another API version, naming both", async () => {
  const s = server!;
  const ok = await cli(s, ["ps", "--json"]);
  expect(ok.code, ok.stderr).toBe(0);

  const seen: Record<string, string | string[] | undefined>[] = [];
  const future = createServer((request, response) => {
    seen.push(request.headers);
    response.writeHead(200, {
      "content-type": "application/json",
      "steward-api-version": "2",
      "steward-release": "9.0.0",
    });
    response.end("[]");
  });
  await new Promise<void>((done) => future.listen(0, "127.0.0.1", done));
  const url = `http://127.0.0.1:${(future.address() as AddressInfo).port}`;
  try {
    const refused = await cli({ url, token: "t" }, ["ps"]);
    expect(refused.code).toBe(3);
    expect(refused.stderr.trim()).toBe(
      `steward: the Steward server at ${url} speaks API version 2 (steward 9.0.0) and this client speaks API version 1 (steward ${release}): use a client of the server's release`,
    );
    expect(seen[0]?.["steward-api-version"]).toBe("1");
    expect(seen[0]?.["steward-release"]).toBe(release);
  } finally {
    await closeServer(future);
  }
});

function closeServer(http: Server): Promise<void> {
  http.closeAllConnections();
  return new Promise((done) => http.close(() => done()));
}
