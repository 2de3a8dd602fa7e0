// The messages one end of an agent connection sends in one turn of the event loop leave as one
// frame: a `batch` holding them in order (one message alone goes as itself). A busy host's reports,
// and the server's starts and acknowledgements to it, cost one frame a turn instead of one each:
// one WebSocket frame to make and read, one JSON text to parse, one wake-up of the receiver. Each
// end sends batches only to a peer that said it reads them (hello's and welcome's `batches`).

import { BATCH_MAX_BYTES, BATCH_MAX_MESSAGES } from "./messages.ts";

/** Every batcher with messages waiting: flushed together once the turn is over. */
const waiting = new Set<TurnFrames>();

function flushWaiting(): void {
  // What a write adds meanwhile waits for the next turn.
  const all = [...waiting];
  waiting.clear();
  for (const frames of all) frames.flush();
}

export class TurnFrames {
  readonly #write: (text: string) => void;
  /** The JSON texts of the messages of this turn, in order. */
  #texts: string[] = [];
  #bytes = 0;

  /** `write` sends one frame's text (a message's own, or a batch's). */
  constructor(write: (text: string) => void) {
    this.#write = write;
  }

  /** Sends `message` with the others of this turn, in the order added. */
  add<M extends { type: string }>(message: M): void {
    const text = JSON.stringify(message);
    if (this.#texts.length > 0 && this.#bytes + text.length > BATCH_MAX_BYTES) this.flush();
    if (this.#texts.length === 0 && !waiting.has(this)) {
      if (waiting.size === 0) setImmediate(flushWaiting);
      waiting.add(this);
    }
    this.#texts.push(text);
    this.#bytes += text.length;
    if (this.#texts.length >= BATCH_MAX_MESSAGES) this.flush();
  }

  /** Sends what waits now (before a message that must not wait behind it, or a close). */
  flush(): void {
    const texts = this.#texts;
    if (texts.length === 0) return;
    this.#texts = [];
    this.#bytes = 0;
    this.#write(texts.length === 1 ? texts[0] : `{"type":"batch","messages":[${texts.join(",")}]}`);
  }
}
