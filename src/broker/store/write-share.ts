// Whether the SQLite store does a small commit on the event loop's own connection or hands it to
// its writer thread (sqlite-writer.ts). Done here, a commit costs the machine less (no thread woken
// and answered, no changes turned to text and back) but holds the event loop while it writes and
// syncs; in the thread it runs beside the loop. So small commits are done here while the store's
// writes take a small share of the time, and all go to the thread while they take a large one: a
// broker placing and ending tens of thousands of tasks a second needs both cores, and a commit
// done here would also gather fewer changes (nothing joins a batch while the loop is held).
// The share is counted over windows of time: a decision holds for the window after the one measured.

/** How long a window of time is over which the share of the store's writes is counted. */
export const WRITE_SHARE_WINDOW_MS = 100;

/**
 * The largest share of a window the store's writes may take for small commits to be done here next.
 * Measured here (2 cores): 2,000 short tasks on 4 slots keep the writes at 0.25 to 0.40 of the time
 * done here and 0.41 to 0.58 in the thread, so they stay here (less of the machine a task); a
 * million-task array on 1,000 hosts, with its large commits in the thread, above that.
 */
export const COMMITS_HERE_MAX_WRITE_SHARE = 0.6;

export interface WriteShareOptions {
  windowMs?: number;
  maxShare?: number;
}

export class WriteShare {
  readonly #windowMs: number;
  readonly #maxShare: number;
  #windowStart: number;
  #writingMs = 0;
  #here = true;

  /** `now`: the clock's time in ms (performance.now()); the first window starts then. */
  constructor(now: number, options: WriteShareOptions = {}) {
    this.#windowStart = now;
    this.#windowMs = options.windowMs ?? WRITE_SHARE_WINDOW_MS;
    this.#maxShare = options.maxShare ?? COMMITS_HERE_MAX_WRITE_SHARE;
  }

  /**
   * Whether a small commit asked at `now` may be done here: decided when a window has passed,
   * by the share of it the writes counted took (a window with no commit asked in it counts as
   * part of the next, the writes spread over the longer time).
   */
  commitsHere(now: number): boolean {
    const elapsed = now - this.#windowStart;
    if (elapsed >= this.#windowMs) {
      const share = elapsed > 0 ? this.#writingMs / elapsed : this.#writingMs > 0 ? 1 : 0;
      this.#here = share <= this.#maxShare;
      this.#windowStart = now;
      this.#writingMs = 0;
    }
    return this.#here;
  }

  /** Counts a write of the store that took `ms` (here, or the writer thread's own time on it). */
  wrote(ms: number): void {
    this.#writingMs += Math.max(0, ms);
  }
}
