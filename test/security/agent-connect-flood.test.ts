// The agents' WebSocket (issue 22, item 7a): until a connection's hello is accepted it may send a
// small budget of bytes only, must say hello first and within a few seconds, and at most 256 such
// connections are open at once (more are answered 503 at the upgrade). 1,000 connections that
// each start a 32 MB frame leave the broker answering /healthz, with its memory bounded. A real
// `steward server` process; the connections are raw sockets and `ws` clients of this test.

import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WebSocket } from "ws";
import { AGENT_CONNECT_PATH, type ServerMessage } from "../../src/common/protocol/messages.ts";
import { facts } from "../helpers/core-harness.ts";
import { cleanup, type StewardProcess, startServerProcess } from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };

beforeAll(async () => {
  server = await startServerProcess({ hostTimeoutSeconds: 30 });
});

afterAll(async () => {
  await server?.stop();
  cleanup(server?.data);
});

/** The resident memory of a process, in bytes. */
function rss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}

/** The head of an agent connection's upgrade, as a WebSocket client writes it. */
function upgradeRequest(): string {
  const { host } = new URL(server.url);
  return [
    `GET ${AGENT_CONNECT_PATH} HTTP/1.1`,
    `Host: ${host}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version: 13",
    "",
    "",
  ].join("\r\n");
}

/** The head of a masked text frame (a client's) announcing `length` bytes; the mask is zeros. */
function frameHead(length: number): Buffer {
  const head = Buffer.alloc(14);
  head[0] = 0x81;
  head[1] = 0x80 | 127;
  head.writeBigUInt64BE(BigInt(length), 2);
  return head;
}

interface RawConnection {
  socket: Socket;
  /** What the server answered first: the status line's code, or null before any answer. */
  status(): number | null;
  /** Resolves when the socket is closed (by either side). */
  closed: Promise<void>;
}

/** Connects, asks for the upgrade and then writes `after` (a frame, say) without waiting. */
function rawConnection(after: Buffer[] = []): Promise<RawConnection> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let answer = "";
    socket.on("data", (chunk) => {
      if (answer.length < 64) answer += chunk.toString("latin1");
    });
    socket.on("error", () => {});
    const closed = new Promise<void>((done) => socket.once("close", () => done()));
    socket.once("connect", () => {
      socket.write(upgradeRequest());
      for (const each of after) socket.write(each);
      resolve({
        socket,
        status: () => {
          const code = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1];
          return code ? Number(code) : null;
        },
        closed,
      });
    });
  });
}

/** /healthz answers within a second. */
async function healthy(): Promise<number> {
  const started = Date.now();
  const response = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(5000) });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
  return Date.now() - started;
}

/** A `ws` client on the agents' route, open. */
async function agentSocket(): Promise<WebSocket> {
  const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}${AGENT_CONNECT_PATH}`);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  return ws;
}

function closeOf(ws: WebSocket): Promise<{ code: number; at: number }> {
  return new Promise((resolve) => ws.once("close", (code) => resolve({ code, at: Date.now() })));
}

it("1,000 connections that each start a 32 MB frame before any hello leave the broker answering and its memory bounded", async () => {
  const pid = server.child.pid!;
  const before = rss(pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rss(pid));
  }, 50);
  // One MiB of the frame's bytes on every connection (one buffer shared by all the writes).
  const chunk = Buffer.alloc(1024 * 1024, "x");
  const connections: RawConnection[] = [];
  for (let i = 0; i < 1000; i++) connections.push(await rawConnection([frameHead(32 * 1024 * 1024), chunk]));
  const probes: number[] = [];
  for (let i = 0; i < 5; i++) {
    probes.push(await healthy());
    await sleep(200);
  }
  // Every connection is closed by the broker (budget spent, or refused at the upgrade).
  const allClosed = await Promise.race([
    Promise.all(connections.map((each) => each.closed)).then(() => true),
    sleep(20_000).then(() => false),
  ]);
  probes.push(await healthy());
  clearInterval(sampler);
  peak = Math.max(peak, rss(pid));
  for (const each of connections) each.socket.destroy();
  console.log(
    `1,000 unwelcomed connections: broker RSS ${before >> 20} MiB, peak ${peak >> 20} MiB; /healthz at most ${Math.max(...probes)} ms`,
  );
  expect(Math.max(...probes), `/healthz answered in ${probes.join(", ")} ms`).toBeLessThan(1000);
  // 1,000 x 1 MiB arrived; what a connection may send before its hello is a small fraction of it.
  expect(peak - before, `RSS from ${before >> 20} MiB to a peak of ${peak >> 20} MiB`).toBeLessThan(
    100 * 1024 * 1024,
  );
  expect(allClosed, "the broker closed every connection that sent no hello").toBe(true);
}, 120_000);

it("refuses connections beyond 256 not yet welcomed with 503 at the upgrade", async () => {
  const connections: RawConnection[] = [];
  for (let i = 0; i < 300; i++) connections.push(await rawConnection());
  const answered = async () =>
    connections.every((each) => each.status() !== null) ? connections.map((each) => each.status()) : null;
  let statuses: (number | null)[] | null = null;
  for (let i = 0; i < 100 && statuses === null; i++) {
    statuses = await answered();
    if (statuses === null) await sleep(50);
  }
  for (const each of connections) each.socket.destroy();
  expect(statuses).not.toBeNull();
  expect(statuses!.filter((status) => status === 101).length).toBe(256);
  expect(statuses!.filter((status) => status === 503).length).toBe(44);
  // Once they are gone, an agent is welcomed again.
  await sleep(500);
  const ws = await agentSocket();
  const answer = new Promise<ServerMessage>((resolve) =>
    ws.once("message", (data) => resolve(JSON.parse(String(data)) as ServerMessage)),
  );
  ws.send(
    JSON.stringify({
      type: "hello",
      v: 1,
      name: "after-the-crowd",
      token: server.joinToken,
      pool: "default",
      slots: 1,
      labels: {},
      facts: facts("after-the-crowd"),
      attempts: [],
    }),
  );
  expect((await answer).type).toBe("welcome");
  ws.close();
}, 60_000);

it("closes a connection whose first message is not a hello, and one that says nothing for 5 s", async () => {
  const early = await agentSocket();
  const earlyClosed = closeOf(early);
  early.send(JSON.stringify({ type: "heartbeat", facts: facts("nobody") }));
  const closed = await Promise.race([earlyClosed, sleep(3000).then(() => null)]);
  early.terminate();
  expect(closed, "closed after a heartbeat before any hello").not.toBeNull();
  expect(closed!.code).toBe(1008);

  const silent = await agentSocket();
  const opened = Date.now();
  const silentClosed = await Promise.race([closeOf(silent), sleep(15_000).then(() => null)]);
  silent.terminate();
  expect(silentClosed, "closed for saying nothing").not.toBeNull();
  expect(silentClosed!.at - opened).toBeGreaterThanOrEqual(4000);
  expect(silentClosed!.code).toBe(1008);
}, 60_000);
