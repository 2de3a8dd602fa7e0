// Submits per user token: a token bucket per key (the token's id), refilled at `ratePerSecond`
// up to `burst`. Admin tokens are not limited (the caller decides). Pure: the clock is passed in
// (the monotonic one); a clock that goes back anyway refills nothing and takes nothing.

import type { ErrorAnswer } from "../../common/api/errors.ts";

/** The default of `--submit-rate`: submits a second per user token, sustained. */
export const DEFAULT_SUBMIT_RATE = 50;
/** The default of `--submit-burst`: submits a user token may send at once after a quiet spell. */
export const DEFAULT_SUBMIT_BURST = 500;

export interface RateLimit {
  ratePerSecond: number;
  burst: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class SubmitRateLimiter {
  readonly limit: RateLimit;
  readonly #buckets = new Map<string, Bucket>();

  constructor(limit: RateLimit) {
    if (!(limit.ratePerSecond > 0) || !(limit.burst >= 1))
      throw new RangeError("the rate and the burst must be positive");
    this.limit = limit;
  }

  /** Takes one submit for `key` at `now` (ms): 0 when allowed, else the seconds until one is. */
  take(key: string, now: number): number {
    const { ratePerSecond, burst } = this.limit;
    const bucket = this.#buckets.get(key) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * ratePerSecond);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return (1 - bucket.tokens) / ratePerSecond;
  }

  /** Forgets buckets that have filled up again (a full bucket is the same as none; call now and then). */
  sweep(now: number): void {
    const { ratePerSecond, burst } = this.limit;
    for (const [key, bucket] of this.#buckets)
      if (bucket.tokens + ((now - bucket.at) / 1000) * ratePerSecond >= burst) this.#buckets.delete(key);
  }
}

/**
 * Takes one submit of `submitter`'s token at `now` (ms): null when allowed, else what the 429
 * answers (its Retry-After in whole seconds, at least one, and the error naming the limit).
 */
export function submitRefusal(
  limiter: SubmitRateLimiter,
  submitter: { tokenId?: string | null; user: string },
  now: number,
): { retryAfter: string; answer: ErrorAnswer } | null {
  const wait = limiter.take(submitter.tokenId ?? submitter.user, now);
  if (wait <= 0) return null;
  const { ratePerSecond, burst } = limiter.limit;
  return {
    retryAfter: String(Math.max(1, Math.ceil(wait))),
    answer: {
      error: {
        code: "rate_limited",
        message: `too many submits from ${submitter.user}'s token: at most ${ratePerSecond} a second (bursts of ${burst}); try again in ${wait.toFixed(2)} s`,
      },
    },
  };
}
