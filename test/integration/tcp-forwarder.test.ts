// The tests' TCP forwarder (test/helpers/tcp-forwarder.ts) against an echo server on loopback:
// each mode does to a real connection what it says, and the timing rule behind delay and throttle.

import { createConnection, createServer, type Server, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import {
  BLACKHOLE,
  PASS,
  RESET,
  releaseAt,
  startForwarder,
  type TcpForwarder,
} from "../helpers/tcp-forwarder.ts";

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** An echo server: what it receives it sends back. */
async function echoServer(): Promise<{ port: number }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closing.push(
    () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  return { port: typeof address === "object" && address ? address.port : 0 };
}

async function forwarderToEcho(): Promise<TcpForwarder> {
  const echo = await echoServer();
  const forwarder = await startForwarder({ target: { host: "127.0.0.1", port: echo.port } });
  closing.push(() => forwarder.close());
  return forwarder;
}

/** A client connection that keeps what it receives, and how it ended. */
interface Client {
  socket: Socket;
  received(): string;
  ended(): string | null;
}

async function connect(forwarder: TcpForwarder): Promise<Client> {
  const socket = createConnection({ host: forwarder.host, port: forwarder.port });
  let text = "";
  let end: string | null = null;
  socket.on("data", (chunk) => {
    text += String(chunk);
  });
  socket.on("error", (error: NodeJS.ErrnoException) => {
    end = error.code ?? error.message;
  });
  socket.on("close", () => {
    end ??= "closed";
  });
  // A connection the forwarder resets as it accepts it may fail before or after "connect".
  await new Promise<void>((resolve) => {
    socket.once("connect", resolve);
    socket.once("error", () => resolve());
  });
  closing.push(async () => {
    socket.destroy();
  });
  return { socket, received: () => text, ended: () => end };
}

async function until(check: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await sleep(10);
  }
}

describe("tcp forwarder", () => {
  it("pass: bytes go both ways", async () => {
    const forwarder = await forwarderToEcho();
    const client = await connect(forwarder);
    client.socket.write("hello");
    await until(() => client.received() === "hello");
    expect(forwarder.open()).toBe(1);
  });

  it("reset: open connections are reset, new ones too, until the mode changes", async () => {
    const forwarder = await forwarderToEcho();
    const open = await connect(forwarder);
    open.socket.write("a");
    await until(() => open.received() === "a");
    forwarder.setMode(RESET);
    await until(() => open.ended() !== null);
    expect(open.ended()).toBe("ECONNRESET");
    const refused = await connect(forwarder);
    await until(() => refused.ended() !== null);
    expect(refused.ended()).toBe("ECONNRESET");
    expect(forwarder.open()).toBe(0);
    forwarder.setMode(PASS);
    const later = await connect(forwarder);
    later.socket.write("b");
    await until(() => later.received() === "b");
  });

  it("blackhole: nothing passes, nothing closes; what was held arrives in order once it passes again", async () => {
    const forwarder = await forwarderToEcho();
    const open = await connect(forwarder);
    forwarder.setMode(BLACKHOLE);
    open.socket.write("one ");
    open.socket.write("two");
    const fresh = await connect(forwarder);
    fresh.socket.write("three");
    await sleep(300);
    expect(open.received()).toBe("");
    expect(fresh.received()).toBe("");
    expect(open.ended()).toBeNull();
    expect(forwarder.open()).toBe(2);
    forwarder.setMode(PASS);
    await until(() => open.received() === "one two" && fresh.received() === "three");
  });

  it("blackhole: a side that went away meanwhile resets the other once it passes again", async () => {
    const forwarder = await forwarderToEcho();
    const staying = await connect(forwarder);
    const leaving = await connect(forwarder);
    forwarder.setMode(BLACKHOLE);
    leaving.socket.resetAndDestroy();
    await sleep(100);
    expect(forwarder.open()).toBe(2);
    forwarder.setMode(PASS);
    await until(() => forwarder.open() === 1);
    staying.socket.write("still");
    await until(() => staying.received() === "still");
  });

  it("delay: each way is held at least the delay, in order", async () => {
    const forwarder = await forwarderToEcho();
    const client = await connect(forwarder);
    forwarder.setMode({ kind: "delay", ms: 150, jitterMs: 50 });
    const start = Date.now();
    for (const part of ["a", "b", "c", "d"]) client.socket.write(part);
    await until(() => client.received() === "abcd");
    // Once to the echo server, once back.
    expect(Date.now() - start).toBeGreaterThanOrEqual(300);
  });

  it("delay: chunks in flight together are each held the delay from their arrival, not one after another", async () => {
    const forwarder = await forwarderToEcho();
    const client = await connect(forwarder);
    forwarder.setMode({ kind: "delay", ms: 300 });
    const start = Date.now();
    for (const part of ["a", "b", "c", "d"]) {
      client.socket.write(part);
      await sleep(50);
    }
    await until(() => client.received() === "abcd", 5000);
    // The last is written at 150 ms and comes back 600 ms later; a delay counted from when the
    // chunk before it left would hold each chunk 300 ms after the last: 1,200 ms each way.
    expect(Date.now() - start).toBeLessThan(1100);
  });

  it("throttle: a way carries no more than its rate", async () => {
    const forwarder = await forwarderToEcho();
    const client = await connect(forwarder);
    forwarder.setMode({ kind: "throttle", bytesPerSecond: 20_000 });
    const start = Date.now();
    // 4 chunks of 4 KB: the last leaves at least 3 chunks' time (0.6 s) after the first.
    for (let i = 0; i < 4; i++) client.socket.write("x".repeat(4000));
    await until(() => client.received().length === 16_000, 5000);
    expect(Date.now() - start).toBeGreaterThanOrEqual(550);
  });
});

describe("releaseAt", () => {
  it("times an item under each mode", () => {
    const cases = [
      { mode: PASS, now: 1000, previous: 2000, bytes: 10, random: 0.5, at: 1000 },
      { mode: RESET, now: 1000, previous: 0, bytes: 0, random: 0.5, at: 1000 },
      { mode: BLACKHOLE, now: 1000, previous: 0, bytes: 0, random: 0.5, at: Number.POSITIVE_INFINITY },
      { mode: { kind: "delay", ms: 100 } as const, now: 1000, previous: 0, bytes: 0, random: 0.5, at: 1100 },
      {
        mode: { kind: "delay", ms: 100, jitterMs: 40 } as const,
        now: 1000,
        previous: 0,
        bytes: 0,
        random: 0.5,
        at: 1120,
      },
      // Never ahead of the item before it.
      {
        mode: { kind: "delay", ms: 100, jitterMs: 40 } as const,
        now: 1000,
        previous: 1300,
        bytes: 0,
        random: 0,
        at: 1300,
      },
      // 500 bytes ahead at 1000 B/s: half a second after them.
      {
        mode: { kind: "throttle", bytesPerSecond: 1000 } as const,
        now: 1000,
        previous: 900,
        bytes: 500,
        random: 0,
        at: 1400,
      },
      // Long idle: at once.
      {
        mode: { kind: "throttle", bytesPerSecond: 1000 } as const,
        now: 5000,
        previous: 900,
        bytes: 500,
        random: 0,
        at: 5000,
      },
    ];
    for (const { mode, now, previous, bytes, random, at } of cases)
      expect(releaseAt(mode, now, previous, bytes, random), JSON.stringify(mode)).toBe(at);
  });
});
