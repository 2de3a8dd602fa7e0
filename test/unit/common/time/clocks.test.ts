import { afterEach, describe, expect, it, vi } from "vitest";
import { monotonicMs, readClocks, steadyNow } from "../../../../src/common/time/clocks.ts";

const HOUR = 3_600_000;

afterEach(() => {
  vi.useRealTimers();
});

describe("the clocks a step of the wall clock does not move", () => {
  it.each([
    { step: "an hour forward", by: HOUR },
    { step: "an hour back", by: -HOUR },
  ])("the wall clock stepped $step: steadyNow and monotonicMs go on as before, Date.now moves", ({ by }) => {
    const steady = steadyNow();
    const monotonic = monotonicMs();
    // Only Date is faked: the wall clock jumps, the monotonic clock (performance.now) does not.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + by });
    const readings = readClocks();
    expect(steadyNow() - steady).toBeGreaterThanOrEqual(0);
    expect(steadyNow() - steady).toBeLessThan(1000);
    expect(readings.monotonicMs - monotonic).toBeLessThan(1000);
    expect(Math.abs(readings.wallMs - steady - by)).toBeLessThan(1000);
  });

  it("steadyNow reads as a date: whole milliseconds near the wall clock's, and never back", () => {
    const readings = Array.from({ length: 1000 }, () => steadyNow());
    expect(readings.every((reading) => Number.isInteger(reading))).toBe(true);
    expect(readings).toEqual([...readings].sort((a, b) => a - b));
    expect(Math.abs(readings[0] - Date.now())).toBeLessThan(1000);
  });
});
