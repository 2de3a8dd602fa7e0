// Whether the store answers, from the calls' outcomes and the clock: a failure until the next
// answer, or a silence longer than the bound.

import { describe, expect, it } from "vitest";
import { StoreHealth } from "../../../../src/broker/server/store-health.ts";

describe("StoreHealth", () => {
  it("is up from its start until the silence passes the bound", () => {
    const health = new StoreHealth(1000);
    expect(health.verdict(1000, 2000)).toStrictEqual({ up: true });
    expect(health.verdict(3000, 2000)).toStrictEqual({ up: true });
    expect(health.verdict(3001, 2000)).toStrictEqual({
      up: false,
      reason: "no answer for 2.0 s (stalled?)",
      since: 3000,
    });
  });

  it("an answer restarts the silence", () => {
    const health = new StoreHealth(1000);
    health.answered(2500);
    expect(health.verdict(4500, 2000)).toStrictEqual({ up: true });
    expect(health.verdict(6700, 2000)).toMatchObject({ up: false, reason: "no answer for 4.2 s (stalled?)" });
    // An answer older than the last one does not take it back.
    health.answered(2000);
    expect(health.verdict(4500, 2000)).toStrictEqual({ up: true });
  });

  it("is down from a failure until the next answer, since the first failure, whatever the bound", () => {
    const health = new StoreHealth(1000);
    health.failed("read ECONNRESET", 1200);
    health.failed("connect ECONNREFUSED", 1900);
    expect(health.verdict(1950, 2000)).toStrictEqual({
      up: false,
      reason: "connect ECONNREFUSED",
      since: 1200,
    });
    expect(health.failures).toBe(2);
    health.answered(2100);
    expect(health.verdict(2100, 2000)).toStrictEqual({ up: true });
    health.failed("read ECONNRESET", 2500);
    expect(health.verdict(2600, Number.POSITIVE_INFINITY)).toMatchObject({ up: false, since: 2500 });
    expect(health.failures).toBe(3);
  });
});
