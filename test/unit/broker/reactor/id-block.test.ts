import { describe, expect, it } from "vitest";
import { IdBlock } from "../../../../src/broker/reactor/id-block.ts";

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

describe("IdBlock runs and ids in flight", () => {
  /** Each step: `next` (one id) or `take N`; what it answers. */
  it.each<[string, number, [string, number][]]>([
    [
      "runs follow single ids from the same block, in the order asked",
      8,
      [
        ["next", 1],
        ["take 3", 2],
        ["next", 5],
      ],
    ],
    [
      "a run longer than the rest of the block skips it: the run comes from the next block",
      4,
      [
        ["next", 1],
        ["next", 2],
        ["take 3", 5],
        ["next", 8],
      ],
    ],
    [
      "a run longer than a block gets a reservation of its own size",
      4,
      [
        ["next", 1],
        ["take 10", 5],
        ["next", 15],
      ],
    ],
  ])("%s", async (_case, size, steps) => {
    const store = source();
    const ids = new IdBlock(store.reserve, size);
    for (const [step, first] of steps) {
      const count = step === "next" ? 1 : Number(step.split(" ")[1]);
      expect(await (step === "next" ? ids.next() : ids.take(count))).toBe(first);
    }
  });

  it("keeps every run in flight until settled; the lowest is what listings stop below", async () => {
    const ids = new IdBlock(source().reserve, 8);
    expect(ids.lowestInFlight()).toBeNull();
    const a = await ids.next();
    const b = await ids.take(3);
    const c = await ids.next();
    expect([a, b, c]).toStrictEqual([1, 2, 5]);
    expect(ids.lowestInFlight()).toBe(1);
    ids.settle(a);
    expect(ids.lowestInFlight()).toBe(2);
    ids.settle(c);
    expect(ids.lowestInFlight()).toBe(2);
    ids.settle(b);
    expect(ids.lowestInFlight()).toBeNull();
  });

  it("refuses a count below 1", async () => {
    await expect(new IdBlock(source().reserve, 4).take(0)).rejects.toThrow(RangeError);
  });
});
