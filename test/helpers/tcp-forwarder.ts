// A TCP forwarder on loopback that a test puts between a client and a server (the brokers and
// PostgreSQL) to make the network between them fail the ways a real one does, and mend again:
//
// - `pass`: bytes go through as they come;
// - `reset`: every open connection is reset (RST, as a firewall's reject or a restarted middlebox
//   does), and so is every new one as soon as it is accepted, until the mode changes;
// - `blackhole`: connections stay open and new ones are accepted, but no byte and no close passes
//   either way (a link that freezes: dropped packets, a hung middlebox). What was held is delivered
//   in order once the mode changes back, as TCP would retransmit it, unless the connection was reset
//   meanwhile;
// - `delay`: each chunk is held `ms` (plus up to `jitterMs`, random) from when it came, and delivered
//   in order (a chunk is never held past the one before it by more than its own delay: a link's
//   delay, not a queue that lets one chunk through per delay);
// - `throttle`: at most `bytesPerSecond` go each way on each connection.
//
// The mode applies to every connection, old and new, at once; `setMode` switches it.

import { createConnection, createServer, type Server, type Socket } from "node:net";

export type ForwarderMode =
  | { kind: "pass" }
  | { kind: "reset" }
  | { kind: "blackhole" }
  | { kind: "delay"; ms: number; jitterMs?: number }
  | { kind: "throttle"; bytesPerSecond: number };

export const PASS: ForwarderMode = { kind: "pass" };
export const RESET: ForwarderMode = { kind: "reset" };
export const BLACKHOLE: ForwarderMode = { kind: "blackhole" };

export interface TcpForwarder {
  /** The address it listens on. */
  host: string;
  port: number;
  mode(): ForwarderMode;
  setMode(mode: ForwarderMode): void;
  /** Connections accepted so far (the count, not the open ones). */
  accepted(): number;
  /** Connections open now. */
  open(): number;
  close(): Promise<void>;
}

export interface ForwarderOptions {
  target: { host: string; port: number };
  /** Where to listen (default 127.0.0.1; port 0: a free one). */
  listen?: { host?: string; port?: number };
  /** For the jitter of `delay` (tests that replay pass a seeded one). */
  random?: () => number;
}

/** A throttled connection sends this many slices of its rate a second. */
const SLICES_PER_SECOND = 20;

/** What travels one way on a connection: bytes, or the end of the stream. */
type Item = { chunk: Buffer } | { end: true };

/**
 * When the next item may leave a lane, under `mode`: `now` for pass, never for blackhole, later for
 * delay (never before the one ahead of it: the order is kept) and throttle (after the bytes ahead of
 * it have had their time). `previous` is when the item ahead of it left (or will).
 */
export function releaseAt(
  mode: ForwarderMode,
  now: number,
  previous: number,
  bytesAhead: number,
  random: number,
): number {
  switch (mode.kind) {
    case "pass":
    case "reset":
      return now;
    case "blackhole":
      return Number.POSITIVE_INFINITY;
    case "delay":
      return Math.max(previous, now + mode.ms + (mode.jitterMs ?? 0) * random);
    case "throttle":
      return Math.max(now, previous + (bytesAhead / mode.bytesPerSecond) * 1000);
  }
}

/** One direction of one connection: what came from one side waits here until the mode lets it go to `to`. */
class Lane {
  readonly #to: Socket;
  /** Items in order, each with when it came and, once timed, when it may leave. */
  readonly #queue: { item: Item; at: number; due: number | null }[] = [];
  readonly #mode: () => ForwarderMode;
  readonly #random: () => number;
  #timer: NodeJS.Timeout | null = null;
  /** When the last item left (or is due to), and how many bytes it carried. */
  #lastAt = 0;
  #lastBytes = 0;

  constructor(to: Socket, mode: () => ForwarderMode, random: () => number) {
    this.#to = to;
    this.#mode = mode;
    this.#random = random;
  }

  add(item: Item): void {
    this.#queue.push({ item, at: Date.now(), due: null });
    this.drain();
  }

  /** Sends what may go now and sets a timer for the next; called again when the mode changes. */
  drain(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const mode = this.#mode();
    // Held: a blackhole's hold is not a delay, so a held item is timed once the mode lets it move.
    if (mode.kind === "blackhole") return;
    while (this.#queue.length > 0) {
      const head = this.#queue[0];
      // A throttled chunk goes in slices of a twentieth of a second's bytes: the rate holds within.
      if (mode.kind === "throttle" && head.due === null && "chunk" in head.item) {
        const slice = Math.max(1, Math.floor(mode.bytesPerSecond / SLICES_PER_SECOND));
        const { chunk } = head.item;
        if (chunk.length > slice) {
          head.item = { chunk: chunk.subarray(0, slice) };
          this.#queue.splice(1, 0, { item: { chunk: chunk.subarray(slice) }, at: head.at, due: null });
        }
      }
      // A delay runs from the chunk's arrival (the chunks ahead of it were in flight meanwhile);
      // a throttle's time from now, after the bytes ahead of it.
      const from = mode.kind === "delay" ? head.at : Date.now();
      head.due ??= releaseAt(mode, from, this.#lastAt, this.#lastBytes, this.#random());
      const wait = head.due - Date.now();
      if (wait > 0) {
        this.#timer = setTimeout(() => this.drain(), wait);
        return;
      }
      this.#queue.shift();
      this.#lastAt = Math.max(head.due, this.#lastAt);
      this.#lastBytes = "chunk" in head.item ? head.item.chunk.length : 0;
      if (this.#to.destroyed) continue;
      if ("chunk" in head.item) this.#to.write(head.item.chunk);
      else this.#to.end();
    }
  }

  /** The mode changed: items not yet released are timed again under the new one. */
  retime(): void {
    for (const entry of this.#queue) entry.due = null;
    this.drain();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#queue.length = 0;
  }
}

interface Pair {
  client: Socket;
  server: Socket;
  lanes: Lane[];
  /** A side failed (reset) while the mode was blackhole: the other learns it when the mode changes. */
  broken: boolean;
}

export async function startForwarder(options: ForwarderOptions): Promise<TcpForwarder> {
  let mode: ForwarderMode = PASS;
  const random = options.random ?? Math.random;
  const pairs = new Set<Pair>();
  let accepted = 0;

  /** Resets both sides of a connection and forgets it. */
  const reset = (pair: Pair) => {
    pairs.delete(pair);
    for (const lane of pair.lanes) lane.stop();
    if (!pair.client.destroyed) pair.client.resetAndDestroy();
    if (!pair.server.destroyed) pair.server.resetAndDestroy();
  };

  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    accepted++;
    client.on("error", () => {});
    if (mode.kind === "reset") {
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ ...options.target, allowHalfOpen: true });
    const toServer = new Lane(upstream, () => mode, random);
    const toClient = new Lane(client, () => mode, random);
    const pair: Pair = { client, server: upstream, lanes: [toServer, toClient], broken: false };
    pairs.add(pair);
    for (const [from, lane] of [
      [client, toServer],
      [upstream, toClient],
    ] as const) {
      // A clean end travels like bytes (held, delayed); a reset or a failure resets the other side
      // at once, unless the link is a blackhole, which lets nothing through, not even that.
      from.on("data", (chunk: Buffer) => lane.add({ chunk }));
      from.on("end", () => lane.add({ end: true }));
      from.on("error", () => {
        if (mode.kind === "blackhole") pair.broken = true;
        else reset(pair);
      });
      from.on("close", () => {
        if (client.destroyed && upstream.destroyed) pairs.delete(pair);
      });
    }
  });
  server.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.listen?.port ?? 0, options.listen?.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address();
  if (typeof address !== "object" || address === null) throw new Error("the forwarder has no address");

  return {
    host: address.address,
    port: address.port,
    mode: () => mode,
    setMode(next) {
      mode = next;
      for (const pair of [...pairs]) {
        if (next.kind === "reset" || (pair.broken && next.kind !== "blackhole")) reset(pair);
        else for (const lane of pair.lanes) lane.retime();
      }
    },
    accepted: () => accepted,
    open: () => pairs.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const pair of pairs) {
          for (const lane of pair.lanes) lane.stop();
          pair.client.destroy();
          pair.server.destroy();
        }
        pairs.clear();
        server.close(() => resolve());
      }),
  };
}
