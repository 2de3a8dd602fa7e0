// A link between the server and an agent in the same process (`steward up`'s own agents): the
// two ends of a WebSocket without the socket. The same text messages cross it as cross a real
// connection, in the order sent, each delivered in a later turn of the event loop (all that were
// sent in one turn together, as the gateway's corked frames leave together); closing either end
// closes both. What it saves is the framing, the socket's system calls and the loop's wake-ups
// for each message: about a tenth of the main thread's time a short task.

import { EventEmitter } from "node:events";

/** What the agent and the gateway use of a connection: a WebSocket (package ws) has all of it. */
export interface LinkSocket {
  readonly readyState: number;
  send(text: string): void;
  ping(): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  on(event: "open" | "pong", listener: () => void): this;
  on(event: "message", listener: (data: unknown) => void): this;
  on(event: "close", listener: (code: number, reason: unknown) => void): this;
  on(event: "error", listener: (error: Error) => void): this;
}

/**
 * Whether a message that came over `socket` was sent by this process's own code (a local link):
 * its sender built it as the message type says (defaults filled in), so the receiver takes it as
 * it is, without checking it against the schema again (a tenth of the link's cost a message).
 */
export function fromThisProcess(socket: LinkSocket): boolean {
  return socket instanceof LocalLinkEnd;
}

/** WebSocket's ready states (the same numbers as in the browser's and in ws). */
export const LINK_STATES = { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 } as const;

/** The close code of a terminated connection, as ws reports it (no close frame). */
const ABNORMAL_CLOSE = 1006;

/** The deliveries of one link, in the order they were asked for, in the next turn of the event loop. */
class Deliveries {
  readonly #queue: (() => void)[] = [];

  add(delivery: () => void): void {
    if (this.#queue.length === 0) setImmediate(() => this.#flush());
    this.#queue.push(delivery);
  }

  #flush(): void {
    // Those added while these are delivered wait for the next turn.
    for (const delivery of this.#queue.splice(0)) delivery();
  }
}

export class LocalLinkEnd extends EventEmitter implements LinkSocket {
  #state: number = LINK_STATES.CONNECTING;
  #peer: LocalLinkEnd | null = null;
  readonly #deliveries: Deliveries;

  constructor(deliveries: Deliveries) {
    super();
    this.#deliveries = deliveries;
  }

  /** Joins two ends (localLink). */
  static pair(a: LocalLinkEnd, b: LocalLinkEnd): void {
    a.#peer = b;
    b.#peer = a;
  }

  get readyState(): number {
    return this.#state;
  }

  /** Opens both ends; `opened` hears its `open` event (a turn later: its listeners are on by then). */
  open(): void {
    this.#deliveries.add(() => {
      if (this.#state !== LINK_STATES.CONNECTING) return;
      this.#state = LINK_STATES.OPEN;
      if (this.#peer) this.#peer.#state = LINK_STATES.OPEN;
      this.emit("open");
    });
  }

  send(text: string): void {
    if (this.#state !== LINK_STATES.OPEN) return;
    const peer = this.#peer;
    this.#deliveries.add(() => {
      // What was sent before a close still arrives, as messages in flight do before a close frame.
      if (peer && peer.#state !== LINK_STATES.CLOSED) peer.emit("message", text, false);
    });
  }

  /** Answered by a pong from the other end, as a live WebSocket peer answers. */
  ping(): void {
    if (this.#state !== LINK_STATES.OPEN) return;
    this.#deliveries.add(() => {
      if (this.#state === LINK_STATES.OPEN) this.emit("pong");
    });
  }

  close(code = 1000, reason = ""): void {
    this.#end(code, reason);
  }

  terminate(): void {
    this.#end(ABNORMAL_CLOSE, "");
  }

  #end(code: number, reason: string): void {
    const ends = [this, this.#peer].filter((end): end is LocalLinkEnd => end !== null);
    if (ends.every((end) => end.#state >= LINK_STATES.CLOSING)) return;
    for (const end of ends) end.#state = LINK_STATES.CLOSING;
    // After what was sent before it, as a close frame comes after the messages.
    this.#deliveries.add(() => {
      for (const end of ends) {
        end.#state = LINK_STATES.CLOSED;
        end.emit("close", code, Buffer.from(reason));
      }
    });
  }
}

/** A new link: [the agent's end, the server's end]. The agent's end hears `open` a turn later. */
export function localLink(): [LocalLinkEnd, LocalLinkEnd] {
  const deliveries = new Deliveries();
  const agentEnd = new LocalLinkEnd(deliveries);
  const serverEnd = new LocalLinkEnd(deliveries);
  LocalLinkEnd.pair(agentEnd, serverEnd);
  agentEnd.open();
  return [agentEnd, serverEnd];
}
