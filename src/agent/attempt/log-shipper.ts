// An attempt's stdout and stderr sent to the server as they grow: the bytes written since the last
// flush, in chunks, from the offset the server has, up to one byte past the server's limit of a log
// (which tells it the log went on). Flushed by a timer, on a reconnect (from the start) and at the
// attempt's end (before its end is reported, so the server has the whole output first).

import { statSync } from "node:fs";
import { open } from "node:fs/promises";
import type { ServerLink } from "../connection/server-link.ts";
import type { Attempt } from "./attempt.ts";
import { attemptRef } from "./attempt-identity.ts";

/** How often the logs of running attempts are sent. */
export const LOG_FLUSH_MS = 400;
/** The most bytes of a log one message carries. */
export const LOG_CHUNK_BYTES = 256 * 1024;

export class LogShipper {
  readonly #link: ServerLink;
  /** The flush of each attempt under way, so that flushes of one attempt run one after another. */
  readonly #flushes = new Map<string, Promise<void>>();
  /** The server's limit of a log (its welcome's maxLogBytes): bytes past it are not sent. */
  maxLogBytes = Number.POSITIVE_INFINITY;

  constructor(link: ServerLink) {
    this.#link = link;
  }

  /** Sends the new bytes of every attempt's logs, when a server has welcomed the agent. */
  async flushAll(attempts: Iterable<Attempt>): Promise<void> {
    if (!this.#link.welcomed) return;
    for (const attempt of attempts) await this.flush(attempt);
  }

  /**
   * Sends the bytes of stdout and stderr written since the last flush (all of them with
   * `fromStart`). One flush of an attempt at a time: the timer's, a reconnect's and an end's.
   */
  flush(attempt: Attempt, fromStart = false): Promise<void> {
    const previous = this.#flushes.get(attempt.key) ?? Promise.resolve();
    const next = previous
      .catch(() => {})
      .then(() => this.#flushNow(attempt, fromStart))
      .finally(() => {
        if (this.#flushes.get(attempt.key) === next) this.#flushes.delete(attempt.key);
      });
    this.#flushes.set(attempt.key, next);
    return next;
  }

  async #flushNow(attempt: Attempt, fromStart: boolean): Promise<void> {
    if (fromStart) {
      attempt.sent.stdout = 0;
      attempt.sent.stderr = 0;
    }
    for (const stream of ["stdout", "stderr"] as const) {
      const path = stream === "stdout" ? attempt.stdoutPath : attempt.stderrPath;
      // Synchronous, like the folder's making: most ends have nothing new to send.
      const info = statSync(path, { throwIfNoEntry: false });
      // One byte past the server's limit tells it the log went on (it writes its marker then).
      const size = Math.min(info?.size ?? 0, this.maxLogBytes + 1);
      if (size <= attempt.sent[stream]) continue;
      const ws = this.#link.attached;
      if (!ws) return;
      const handle = await open(path, "r");
      try {
        while (attempt.sent[stream] < size) {
          // The offset is taken before the read: another flush of this attempt (a reconnect's
          // resend, an end) may move `sent` meanwhile, and these bytes belong where they were read.
          const offset = attempt.sent[stream];
          const length = Math.min(LOG_CHUNK_BYTES, size - offset);
          const buffer = Buffer.alloc(length);
          const { bytesRead } = await handle.read(buffer, 0, length, offset);
          if (bytesRead === 0) break;
          this.#link.send(ws, {
            type: "log",
            ...attemptRef(attempt.spec),
            stream,
            offset,
            data: buffer.subarray(0, bytesRead).toString("base64"),
          });
          attempt.sent[stream] = Math.max(attempt.sent[stream], offset + bytesRead);
        }
      } finally {
        await handle.close();
      }
    }
  }
}
