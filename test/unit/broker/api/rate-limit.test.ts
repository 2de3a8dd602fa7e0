import { describe, expect, it } from "vitest";
import { SubmitRateLimiter, submitRefusal } from "../../../../src/broker/api/rate-limit.ts";

describe("SubmitRateLimiter", () => {
  it.each([
    // [rate, burst, submits at these ms, the waits answered]
    { rate: 2, burst: 3, at: [0, 0, 0, 0], waits: [0, 0, 0, 0.5] },
    { rate: 2, burst: 3, at: [0, 0, 0, 500], waits: [0, 0, 0, 0] },
    { rate: 2, burst: 3, at: [0, 0, 0, 250], waits: [0, 0, 0, 0.25] },
    { rate: 10, burst: 1, at: [0, 50, 100, 100], waits: [0, 0.05, 0, 0.1] },
    { rate: 1, burst: 2, at: [0, 0, 10_000, 10_000, 10_000], waits: [0, 0, 0, 0, 1] },
    // A clock set back an hour takes nothing from the bucket, and it fills again from there.
    { rate: 2, burst: 3, at: [3_600_000, 0, 0, 0], waits: [0, 0, 0, 0.5] },
    { rate: 2, burst: 1, at: [3_600_000, 0, 500], waits: [0, 0.5, 0] },
  ])("rate $rate burst $burst at $at -> $waits", ({ rate, burst, at, waits }) => {
    const limiter = new SubmitRateLimiter({ ratePerSecond: rate, burst });
    expect(at.map((now) => Number(limiter.take("t", now).toFixed(6)))).toEqual(waits);
  });

  it("keeps one bucket per token", () => {
    const limiter = new SubmitRateLimiter({ ratePerSecond: 1, burst: 1 });
    expect(limiter.take("a", 0)).toBe(0);
    expect(limiter.take("b", 0)).toBe(0);
    expect(limiter.take("a", 0)).toBe(1);
  });

  it("a refused submit takes nothing: asking again at once gets the same wait", () => {
    const limiter = new SubmitRateLimiter({ ratePerSecond: 4, burst: 1 });
    limiter.take("a", 0);
    expect(limiter.take("a", 0)).toBe(0.25);
    expect(limiter.take("a", 0)).toBe(0.25);
  });

  it("sweep forgets full buckets only", () => {
    const limiter = new SubmitRateLimiter({ ratePerSecond: 1, burst: 2 });
    limiter.take("a", 0);
    limiter.take("a", 0);
    limiter.sweep(1000);
    expect(limiter.take("a", 1000)).toBe(0);
    expect(limiter.take("a", 1000)).toBe(1);
  });

  it("refuses a rate or burst that is not positive", () => {
    expect(() => new SubmitRateLimiter({ ratePerSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => new SubmitRateLimiter({ ratePerSecond: 1, burst: 0 })).toThrow(RangeError);
  });
});

describe("submitRefusal", () => {
  it("takes a submit of the token (by its id, else its user), refusing past the rate with the 429's parts", () => {
    const limiter = new SubmitRateLimiter({ ratePerSecond: 4, burst: 1 });
    expect(submitRefusal(limiter, { tokenId: "t1", user: "alice" }, 0)).toBeNull();
    expect(submitRefusal(limiter, { tokenId: "t2", user: "alice" }, 0)).toBeNull();
    expect(submitRefusal(limiter, { tokenId: "t1", user: "alice" }, 0)).toStrictEqual({
      retryAfter: "1",
      answer: {
        error: {
          code: "rate_limited",
          message:
            "too many submits from alice's token: at most 4 a second (bursts of 1); try again in 0.25 s",
        },
      },
    });
    expect(submitRefusal(limiter, { user: "bob" }, 0)).toBeNull();
    expect(limiter.take("bob", 0)).toBe(0.25);
  });

  it("rounds the Retry-After up to whole seconds", () => {
    const limiter = new SubmitRateLimiter({ ratePerSecond: 0.4, burst: 1 });
    submitRefusal(limiter, { user: "carol" }, 0);
    expect(submitRefusal(limiter, { user: "carol" }, 0)?.retryAfter).toBe("3");
  });
});
