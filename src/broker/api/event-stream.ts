// One client's stream of job events (GET /api/v1/events): the stored events after the client's
// last id first, then the live ones, none missing and none twice.
//
// Live events are listened to before the stored ones are read, so an event committed meanwhile is
// in the buffer if not in what was read; once the stored events are out, the buffer goes out
// without those already sent, then live events go straight out. Event ids increase in commit
// order, so "already sent" is "not above the last id sent".
//
// Nothing here grows with a client that does not read. The bytes queued in the response are
// capped: a client past the cap is dropped (the response is cut) and comes back with
// Last-Event-ID, from the store. The live events held while stored ones are read are capped too:
// past the cap they are let go, for they are stored, and the reading of stored events goes on
// until it ends with no event let go meanwhile.

import type { StreamEvent } from "../../common/api/events.ts";
import type { EventRecord } from "../../common/model/records.ts";
import type { ReadModel } from "./ports.ts";
import { eventView } from "./views.ts";

/** Stored events are read in pages of this many when a client catches up. */
export const EVENT_PAGE = 500;

/** Bytes queued in a stream's response, at most; a client whose queue passes it is dropped. */
export const MAX_QUEUED_BYTES = 8 * 1024 * 1024;

/** Live events held while stored ones are read, at most; past it they are read from the store. */
export const MAX_HELD_EVENTS = 5000;

export interface EventStreamLimits {
  queuedBytes: number;
  heldEvents: number;
}

/** Where the stream is written: the HTTP response. */
export interface EventSink {
  write(chunk: string): boolean;
  once(event: "drain" | "close", listener: () => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
  /** Bytes written but not yet taken by the client (Node's `writable.writableLength`). */
  readonly writableLength: number;
  /** Cuts the connection. */
  destroy(): unknown;
}

export class EventStream {
  readonly #sink: EventSink;
  readonly #job: string | null;
  readonly #page: number;
  readonly #visible: (event: EventRecord) => boolean;
  readonly #limits: EventStreamLimits;
  readonly #dropped: (queued: number) => void;
  #buffer: EventRecord[] | null = [];
  /** Live events were let go while stored ones were read: the reading goes on. */
  #letGo = false;
  #closed = false;

  /**
   * `visible` leaves out events the client may not see (another user's jobs); `dropped` is told
   * when the client is cut for not reading.
   */
  constructor(
    sink: EventSink,
    job: string | null,
    page = EVENT_PAGE,
    visible: (event: EventRecord) => boolean = () => true,
    limits: EventStreamLimits = { queuedBytes: MAX_QUEUED_BYTES, heldEvents: MAX_HELD_EVENTS },
    dropped: (queued: number) => void = () => {},
  ) {
    this.#sink = sink;
    this.#job = job;
    this.#page = page;
    this.#visible = visible;
    this.#limits = limits;
    this.#dropped = dropped;
  }

  /** Whether the stream ended (closed by the client, or dropped). */
  get closed(): boolean {
    return this.#closed;
  }

  /** A live event, as the reactor emits it once committed. */
  live(event: EventRecord): void {
    if (this.#closed || (this.#job !== null && event.jobId !== this.#job)) return;
    if (!this.#buffer) {
      this.#write(event);
      return;
    }
    if (this.#buffer.length >= this.#limits.heldEvents) {
      // Stored already (live events come after their commit): read from the store instead.
      this.#buffer = [];
      this.#letGo = true;
      return;
    }
    this.#buffer.push(event);
  }

  /** Text that is not an event (a comment, a progress line), under the same cap. */
  send(text: string): void {
    if (this.#closed) return;
    this.#sink.write(text);
    this.#checkQueue();
  }

  /** Sends the stored events with an id above `after`, page by page, then whatever came live meanwhile. */
  async catchUp(store: Pick<ReadModel, "eventsAfter">, after: number): Promise<void> {
    let last = after;
    for (;;) {
      if (this.#closed) return;
      const page = await store.eventsAfter(last, this.#page, this.#job ?? undefined);
      for (const event of page) {
        if (!this.#write(event)) await this.#drained();
        last = event.id;
      }
      if (page.length < this.#page) {
        if (!this.#letGo) break;
        // Events were let go while this page was read, perhaps after it: read again.
        this.#letGo = false;
      }
    }
    this.#goLive(last);
  }

  /** No catching up: live events from now on. */
  liveOnly(): void {
    this.#goLive(0);
  }

  close(): void {
    this.#closed = true;
    this.#buffer = null;
  }

  /** The buffer goes out, but for what was sent already; from now on live events go straight out. */
  #goLive(last: number): void {
    const buffered = this.#buffer ?? [];
    this.#buffer = null;
    for (const event of buffered) if (event.id > last) this.#write(event);
  }

  #write(event: EventRecord): boolean {
    if (this.#closed || !this.#visible(event)) return true;
    const data: StreamEvent = { jobId: event.jobId, ...eventView(event) };
    const room = this.#sink.write(`event: job\nid: ${event.id}\ndata: ${JSON.stringify(data)}\n\n`);
    this.#checkQueue();
    return room;
  }

  /** Drops the client once more than the cap waits for it to read. */
  #checkQueue(): void {
    const queued = this.#sink.writableLength;
    if (queued <= this.#limits.queuedBytes || this.#closed) return;
    this.close();
    this.#sink.destroy();
    this.#dropped(queued);
  }

  #drained(): Promise<void> {
    return new Promise((done) => {
      const finish = () => {
        this.#sink.off("drain", finish);
        this.#sink.off("close", finish);
        done();
      };
      this.#sink.once("drain", finish);
      this.#sink.once("close", finish);
    });
  }
}
