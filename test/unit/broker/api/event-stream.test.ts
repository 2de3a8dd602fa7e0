// A client catching up on job events: stored events first, page by page, then the live ones;
// events committed while the stored ones are read come once, in order, whatever the timing.

import { describe, expect, it } from "vitest";
import { type EventSink, EventStream } from "../../../../src/broker/api/event-stream.ts";
import type { EventRecord } from "../../../../src/common/model/records.ts";

const event = (id: number, jobId = "1"): EventRecord => ({
  id,
  jobId,
  at: 1_700_000_000_000 + id,
  kind: "state",
  data: { n: id },
  message: `event ${id}`,
});

/** A response that keeps what is written; `full` makes writes report back-pressure. */
function sink(full = false) {
  const written: string[] = [];
  const listeners = new Map<string, () => void>();
  const target: EventSink & { written: string[]; drain(): void } = {
    written,
    writableLength: 0,
    destroy() {},
    write(chunk) {
      written.push(chunk);
      return !full;
    },
    once(name, listener) {
      listeners.set(name, listener);
    },
    off(name) {
      listeners.delete(name);
    },
    drain() {
      listeners.get("drain")?.();
    },
  };
  return target;
}

const ids = (written: string[]) => written.map((chunk) => Number(/\nid: (\d+)\n/.exec(chunk)?.[1]));

/** A store of `stored` events whose reads can let live events happen in between. */
function store(stored: EventRecord[], duringRead: (call: number) => void = () => {}) {
  let calls = 0;
  return {
    calls: () => calls,
    async eventsAfter(after: number, limit: number, jobId?: string) {
      duringRead(++calls);
      return stored.filter((e) => e.id > after && (!jobId || e.jobId === jobId)).slice(0, limit);
    },
  };
}

describe("EventStream", () => {
  it("writes each event as event, id and data lines", () => {
    const out = sink();
    const stream = new EventStream(out, null);
    stream.liveOnly();
    stream.live(event(7, "3"));
    expect(out.written).toEqual([
      `event: job\nid: 7\ndata: ${JSON.stringify({
        jobId: "3",
        id: 7,
        at: new Date(1_700_000_000_007).toISOString(),
        kind: "state",
        data: { n: 7 },
        message: "event 7",
      })}\n\n`,
    ]);
  });

  it("sends the stored events after the last id in pages, then the live ones", async () => {
    const stored = Array.from({ length: 11 }, (_, i) => event(i + 1));
    const out = sink();
    const stream = new EventStream(out, null, 3);
    const from = store(stored);
    await stream.catchUp(from, 4);
    expect(from.calls()).toBe(3); // 5-7, 8-10, 11
    stream.live(event(12));
    expect(ids(out.written)).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it("sends an event committed during the catch-up once, whether or not the read saw it", async () => {
    const stored = Array.from({ length: 6 }, (_, i) => event(i + 1));
    const out = sink();
    const stream = new EventStream(out, null, 4);
    // During the first read, events 7 and 8 are committed (the read sees them: they are stored)
    // and emitted live; during the second, 9 is committed after that read (live only).
    const from = store(stored, (call) => {
      if (call === 1) {
        stored.push(event(7), event(8));
        stream.live(event(7));
        stream.live(event(8));
      }
      if (call === 2) queueMicrotask(() => stream.live(event(9)));
    });
    await stream.catchUp(from, 2);
    stream.live(event(10));
    expect(ids(out.written)).toEqual([3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("keeps to one job when asked, stored and live", async () => {
    const stored = [event(1, "a"), event(2, "b"), event(3, "a"), event(4, "b")];
    const out = sink();
    const stream = new EventStream(out, "a", 10);
    await stream.catchUp(store(stored), 0);
    stream.live(event(5, "b"));
    stream.live(event(6, "a"));
    expect(ids(out.written)).toEqual([1, 3, 6]);
  });

  it("waits for the client to drain before the next stored event, and stops once closed", async () => {
    const stored = Array.from({ length: 3 }, (_, i) => event(i + 1));
    const out = sink(true);
    const stream = new EventStream(out, null, 10);
    const caughtUp = stream.catchUp(store(stored), 0);
    await new Promise((done) => setImmediate(done));
    expect(ids(out.written)).toEqual([1]);
    out.drain();
    await new Promise((done) => setImmediate(done));
    expect(ids(out.written)).toEqual([1, 2]);
    stream.close();
    out.drain();
    await caughtUp;
    stream.live(event(4));
    expect(ids(out.written)).toEqual([1, 2]);
  });

  it("lets go of live events past the cap during the catch-up, reads them from the store, and sends each once", async () => {
    const stored = Array.from({ length: 4 }, (_, i) => event(i + 1));
    const out = sink();
    const stream = new EventStream(out, null, 20, undefined, { queuedBytes: 1e9, heldEvents: 3 });
    // Right after the first read (which saw 1-4 only), 10 events are committed and emitted: more
    // than the 3 it may hold. The page was short, yet it reads again.
    const from = store(stored, (call) => {
      if (call !== 1) return;
      queueMicrotask(() => {
        for (let id = 5; id <= 14; id++) {
          stored.push(event(id));
          stream.live(event(id));
        }
      });
    });
    await stream.catchUp(from, 0);
    expect(from.calls()).toBe(2);
    stream.live(event(15));
    expect(ids(out.written)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
  });

  it("drops a client once more than the cap waits for it to read, and writes nothing more", () => {
    const out = Object.assign(sink(), { queued: 0, destroyed: false });
    Object.defineProperty(out, "writableLength", { get: () => out.queued });
    out.destroy = () => {
      out.destroyed = true;
    };
    const dropped: number[] = [];
    const stream = new EventStream(
      out,
      null,
      10,
      undefined,
      { queuedBytes: 1000, heldEvents: 10 },
      (queued) => dropped.push(queued),
    );
    stream.liveOnly();
    stream.live(event(1));
    out.queued = 1001;
    stream.live(event(2));
    expect(out.destroyed).toBe(true);
    expect(dropped).toEqual([1001]);
    expect(stream.closed).toBe(true);
    stream.live(event(3));
    stream.send(": keep-alive\n\n");
    expect(ids(out.written)).toEqual([1, 2]);
  });
});
