import { describe, expect, it } from "vitest";
import { IdBlock } from "../../src/broker/reactor/id-block.ts";

/** A reservation source like the store's: consecutive blocks, counted. */
function source() {
  let next = 1;
  const calls: number[] = [];
  let failNext = false;
  return {
    calls,
    failOnce() {
      failNext = true;
    },
    reserve: async (count: number) => {
      calls.push(count);
      if (failNext) {
        failNext = false;
        throw new Error("store down");
      }
      const first = next;
      next += count;
      return first;
    },
  };
}

describe("IdBlock", () => {
  it("hands out consecutive ids and reserves the next block before the first runs out", async () => {
    const store = source();
    const ids = new IdBlock(store.reserve, 4);
    const got: number[] = [];
    for (let i = 0; i < 10; i++) got.push(await ids.next());
    expect(got).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(store.calls.every((count) => count === 4)).toBe(true);
    expect(store.calls.length).toBeLessThanOrEqual(4);
  });

  it("gives concurrent callers distinct ids", async () => {
    const store = source();
    const ids = new IdBlock(store.reserve, 3);
    const got = await Promise.all(Array.from({ length: 20 }, () => ids.next()));
    expect(new Set(got).size).toBe(20);
  });

  it("asks again after a failed reservation", async () => {
    const store = source();
    store.failOnce();
    const ids = new IdBlock(store.reserve, 4);
    await expect(ids.next()).rejects.toThrow("store down");
    expect(await ids.next()).toBeGreaterThanOrEqual(1);
  });
});
