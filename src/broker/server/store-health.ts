// Whether this broker's store answers, as its own calls find it: what /healthz, the 503 of a
// request and the `steward_store_up` gauge say. The calls that tell it are the election rounds
// (every third of a lease, on PostgreSQL) and the commits. The store is unavailable from a call
// that failed for its unavailability (store-unavailable.ts) until one succeeds, and also while
// no call has been answered for `staleAfterMs` (a stalled connection: a call waits, it has not
// failed yet). Pure: the clock is passed in.

export type StoreVerdict =
  | { up: true }
  | {
      up: false;
      /** One line, e.g. "read ECONNRESET" or "no answer for 4.2 s". */
      reason: string;
      /** When it was first found unavailable (ms since the epoch). */
      since: number;
    };

export class StoreHealth {
  /** The last answer (a success) and the failure after it, if any. */
  #answeredAt: number;
  #failure: { reason: string; since: number } | null = null;
  /** Failed calls counted so far (for the metric). */
  failures = 0;

  constructor(now: number) {
    this.#answeredAt = now;
  }

  /** A call answered: the store is up. */
  answered(now: number): void {
    this.#answeredAt = Math.max(this.#answeredAt, now);
    this.#failure = null;
  }

  /** A call failed for the store's unavailability. */
  failed(reason: string, now: number): void {
    this.failures++;
    this.#failure = { reason, since: this.#failure?.since ?? now };
  }

  /**
   * The verdict at `now`: down with the last failure's reason, or with the silence since the last
   * answer once it passes `staleAfterMs`; up otherwise.
   */
  verdict(now: number, staleAfterMs: number): StoreVerdict {
    if (this.#failure) return { up: false, reason: this.#failure.reason, since: this.#failure.since };
    const silent = now - this.#answeredAt;
    if (silent > staleAfterMs)
      return {
        up: false,
        reason: `no answer for ${(silent / 1000).toFixed(1)} s (stalled?)`,
        since: this.#answeredAt + staleAfterMs,
      };
    return { up: true };
  }
}
