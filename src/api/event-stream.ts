// One client's stream of job events (GET /api/v1/events): the stored events after the client's
// last id first, then the live ones, none missing and none twice.
//
// Live events are listened to before the stored ones are read, so an event committed meanwhile is
// in the buffer if not in what was read; once the stored events are out, the buffer goes out
// without those already sent, then live events go straight out. Event ids increase in commit
// order, so "already sent" is "not above the last id sent".

import type { EventRecord } from "../model/records.ts";
import type { Store } from "../store/store.ts";
import type { StreamEvent } from "./schemas.ts";
import { eventView } from "./views.ts";

/** Stored events are read in pages of this many when a client catches up. */
export const EVENT_PAGE = 500;

/** Where the stream is written: the HTTP response. */
export interface EventSink {
  write(chunk: string): boolean;
  once(event: "drain" | "close", listener: () => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
}

export class EventStream {
  readonly #sink: EventSink;
  readonly #job: string | null;
  readonly #page: number;
  readonly #visible: (event: EventRecord) => boolean;
  #buffer: EventRecord[] | null = [];
  #closed = false;

  /** `visible` leaves out events the client may not see (another user's jobs). */
  constructor(
    sink: EventSink,
    job: string | null,
    page = EVENT_PAGE,
    visible: (event: EventRecord) => boolean = () => true,
  ) {
    this.#sink = sink;
    this.#job = job;
    this.#page = page;
    this.#visible = visible;
  }

  /** A live event, as the reactor emits it once committed. */
  live(event: EventRecord): void {
    if (this.#closed || (this.#job !== null && event.jobId !== this.#job)) return;
    if (this.#buffer) this.#buffer.push(event);
    else this.#write(event);
  }

  /** Sends the stored events with an id above `after`, page by page, then whatever came live meanwhile. */
  async catchUp(store: Pick<Store, "eventsAfter">, after: number): Promise<void> {
    let last = after;
    for (;;) {
      if (this.#closed) return;
      const page = await store.eventsAfter(last, this.#page, this.#job ?? undefined);
      for (const event of page) {
        if (!this.#write(event)) await this.#drained();
        last = event.id;
      }
      if (page.length < this.#page) break;
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
    return this.#sink.write(`event: job\nid: ${event.id}\ndata: ${JSON.stringify(data)}\n\n`);
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
