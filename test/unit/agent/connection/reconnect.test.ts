import { describe, expect, it } from "vitest";
import {
  RECONNECT_BASE_MS,
  RECONNECT_CAP_MS,
  reconnectDelayMs,
} from "../../../../src/agent/connection/reconnect.ts";

describe("reconnectDelayMs", () => {
  it("uses a 100 ms base and a 1.5 s cap, below the default host timeout", () => {
    expect(RECONNECT_BASE_MS).toBe(100);
    expect(RECONNECT_CAP_MS).toBe(1500);
  });

  it.each([
    // failures, random, ms
    [0, 0, 50],
    [0, 0.5, 75],
    [1, 0, 50],
    [1, 0.999, 100],
    [2, 0, 100],
    [2, 0.5, 150],
    [3, 0, 200],
    [4, 0.25, 500],
    [5, 0, 750],
    [6, 0.5, 1125],
    [10, 0, 750],
    [100, 0.999, 1499],
    [5000, 0.5, 1125],
  ])("after %d failures with random %d -> %d ms", (failures, random, ms) => {
    expect(reconnectDelayMs(failures, random)).toBe(ms);
  });

  it("ceiling doubles per failure up to the cap", () => {
    const ceilings = [1, 2, 3, 4, 5, 6, 7].map((n) => reconnectDelayMs(n, 1));
    expect(ceilings).toEqual([100, 200, 400, 800, 1500, 1500, 1500]);
  });

  it("stays between half the ceiling and the ceiling, and never passes the cap", () => {
    for (let failures = 0; failures <= 40; failures++) {
      const ceiling = Math.min(RECONNECT_CAP_MS, RECONNECT_BASE_MS * 2 ** Math.max(0, failures - 1));
      for (let i = 0; i < 20; i++) {
        const delay = reconnectDelayMs(failures, i / 20);
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
        expect(delay).toBeLessThanOrEqual(ceiling);
        expect(delay).toBeLessThanOrEqual(RECONNECT_CAP_MS);
        expect(Number.isInteger(delay)).toBe(true);
      }
    }
  });
});
