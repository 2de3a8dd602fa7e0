// Event streams (issue 22, item 7b): a client that stops reading is dropped once its stream's
// buffer passes a cap, so that the broker's memory stays bounded however many events are made
// meanwhile, and a token may hold only so many streams at once. A real `steward server`; the
// events are made cheaply by a stand-in agent (a WebSocket client of this test) whose running job
// "writes" a thousand distinct invalid requirements per heartbeat, each refused with an event of
// about 1 KB.

import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WebSocket } from "ws";
import { AGENT_CONNECT_PATH, type ServerMessage } from "../../src/common/protocol/messages.ts";
import { facts } from "../helpers/core-harness.ts";
import { api, cleanup, cli, type StewardProcess, startServerProcess, waitFor } from "../helpers/steward.ts";

/** Events the test asks for (fewer if making them takes more than MAKE_MS). */
const EVENTS = 100_000;
const PER_HEARTBEAT = 1000;
const MAKE_MS = 90_000;

let server: StewardProcess & { joinToken: string };
let agent: WebSocket;
let jobId: string;

beforeAll(async () => {
  server = await startServerProcess({ hostTimeoutSeconds: 60 });
  agent = new WebSocket(`${server.url.replace(/^http/, "ws")}${AGENT_CONNECT_PATH}`);
  const messages: ServerMessage[] = [];
  agent.on("message", (data) => messages.push(JSON.parse(String(data)) as ServerMessage));
  await new Promise((resolve, reject) => {
    agent.once("open", resolve);
    agent.once("error", reject);
  });
  agent.send(
    JSON.stringify({
      type: "hello",
      v: 1,
      name: "stand-in",
      token: server.joinToken,
      pool: "default",
      slots: 1,
      labels: {},
      facts: facts("stand-in"),
      attempts: [],
    }),
  );
  await waitFor("the welcome", () => messages.some((message) => message.type === "welcome"));
  ({ id: jobId } = await api(server, "POST", "/api/v1/jobs", { command: "sleep 1000" }));
  await waitFor("the start", () => messages.some((message) => message.type === "start"));
  agent.send(
    JSON.stringify({
      type: "report",
      seq: 1,
      event: { kind: "started", jobId, taskIndex: 0, attempt: 1, pid: 1 },
    }),
  );
  await waitFor("the ack", () => messages.some((message) => message.type === "ack"));
});

afterAll(async () => {
  agent?.terminate();
  await server?.stop();
  cleanup(server?.data);
});

function rss(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}

/** One heartbeat of the stand-in agent whose job wrote `count` distinct requirements, all refused. */
function refusedRequirements(from: number, count: number): string {
  const pad = "x".repeat(1000);
  const requirements = [];
  // A string is not a boolean: refused without much work, and each text is new.
  for (let i = from; i < from + count; i++)
    requirements.push({ jobId, taskIndex: 0, attempt: 1, text: `"${i}:${pad}"` });
  return JSON.stringify({ type: "heartbeat", facts: facts("stand-in"), progress: [], requirements });
}

/** A stream read as it comes, keeping only the count of job events and the last id. */
async function countingReader(token: string): Promise<{ count(): number; close(): void }> {
  const controller = new AbortController();
  const response = await fetch(`${server.url}/api/v1/events`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  expect(response.status).toBe(200);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let count = 0;
  let tail = "";
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const text = tail + value;
      count += text.split("event: job\n").length - 1;
      tail = text.slice(-12);
      // A match inside the tail was counted already: keep only what cannot be one.
      if (tail.includes("event: job\n")) tail = tail.slice(tail.indexOf("event: job\n") + 11);
    }
  })().catch(() => {});
  return { count: () => count, close: () => controller.abort() };
}

/** GET /api/v1/events on a plain socket that is never read (paused before the answer arrives). */
function stalledClient(token: string): Promise<Socket> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    socket.once("error", reject);
    socket.once("connect", () => {
      socket.pause();
      socket.write(
        `GET /api/v1/events HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${token}\r\n\r\n`,
      );
      resolve(socket);
    });
  });
}

it("drops a client that stops reading, and the broker's memory stays bounded while 100,000 events are made", async () => {
  const pid = server.child.pid!;
  const stalled = await stalledClient(server.token);
  const reader = await countingReader(server.token);
  await sleep(300);
  const before = rss(pid);
  let peak = before;
  const started = Date.now();
  let made = 0;
  while (made < EVENTS && Date.now() - started < MAKE_MS) {
    agent.send(refusedRequirements(made, PER_HEARTBEAT));
    made += PER_HEARTBEAT;
    // Paced by the reader that keeps up: the broker is not asked for more than it can stream.
    await waitFor(`${made} events read`, () => reader.count() >= made, 30_000, 10);
    peak = Math.max(peak, rss(pid));
  }
  const seconds = (Date.now() - started) / 1000;
  reader.close();
  // The stalled client now reads what reached it: the stream ends, for the broker dropped it.
  const ended = new Promise<boolean>((resolve) => {
    stalled.once("close", () => resolve(true));
    setTimeout(() => resolve(false), 15_000);
  });
  stalled.on("error", () => {});
  stalled.on("data", () => {});
  stalled.resume();
  const dropped = await ended;
  stalled.destroy();
  console.log(
    `${made} events in ${seconds.toFixed(1)} s; broker RSS ${before >> 20} MiB, peak ${peak >> 20} MiB`,
  );
  expect(made, "events made in the time given").toBeGreaterThanOrEqual(50_000);
  // About 1.2 KB an event: 100,000 of them are 120 MB the stalled client never took.
  expect(peak - before, `RSS from ${before >> 20} MiB to a peak of ${peak >> 20} MiB`).toBeLessThan(
    100 * 1024 * 1024,
  );
  expect(dropped, "the stalled client was dropped").toBe(true);
}, 180_000);

it("takes at most 8 streams at once per token: the 9th is answered 429, another token's is not", async () => {
  const open: AbortController[] = [];
  const stream = async (token: string) => {
    const controller = new AbortController();
    const response = await fetch(`${server.url}/api/v1/events`, {
      headers: { authorization: `Bearer ${token}` },
      signal: controller.signal,
    });
    open.push(controller);
    return response;
  };
  try {
    for (let i = 0; i < 8; i++) expect((await stream(server.token)).status).toBe(200);
    const ninth = await stream(server.token);
    expect(ninth.status).toBe(429);
    const body = (await ninth.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("too_many_streams");
    expect(body.error.message).toContain("at most 8 event streams at once");
    const created = await cli(server, ["token", "create", "--user", "ursula", "--role", "user"]);
    expect(created.code, created.stderr).toBe(0);
    expect((await stream(created.stdout.trim())).status).toBe(200);
    // One closed, one more may open.
    open[0].abort();
    await waitFor("a stream's slot to free", async () => {
      const again = await stream(server.token);
      if (again.status === 200) return true;
      await again.arrayBuffer();
      return false;
    });
  } finally {
    for (const controller of open) controller.abort();
  }
}, 60_000);
