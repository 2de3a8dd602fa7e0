// The order of turns in a pass (compareTurns), which the pass gives its turns by and explain reads
// whom a job waits behind from: the tier first; one owner's jobs by queue order; other owners' by
// their shares, then submit order, job priority counting for nothing between owners.

import { describe, expect, it } from "vitest";
import type { OwnerShare } from "../../../../src/broker/scheduler/fair-share.ts";
import { compareOwnersTurns, compareTurns, type Turn } from "../../../../src/broker/scheduler/queue-order.ts";

const IDLE: OwnerShare = { runningCpus: 0, recentCpuSeconds: 0 };
const BUSY: OwnerShare = { runningCpus: 8, recentCpuSeconds: 0 };
const LOW_FACTOR: OwnerShare = { runningCpus: 0, recentCpuSeconds: 0, factor: 0.2 };

const turn = (fields: Partial<Turn>): Turn => ({ priority: 0, createdAt: 0, seq: 1, owner: "a", ...fields });

describe("compareTurns", () => {
  it.each<[string, Partial<Turn>, Partial<Turn>, OwnerShare, OwnerShare, "a" | "b"]>([
    ["the higher tier, whatever the shares", { qosPriority: 10, owner: "x" }, { seq: 0 }, BUSY, IDLE, "a"],
    ["the higher tier of one owner", { qosPriority: 0, priority: 9 }, { qosPriority: 5 }, IDLE, IDLE, "b"],
    ["one owner's higher job priority", { priority: 2, seq: 9 }, { priority: 1 }, IDLE, IDLE, "a"],
    ["one owner's older job", { createdAt: 5 }, { createdAt: 1, seq: 9 }, IDLE, IDLE, "b"],
    ["one owner's job submitted first", { seq: 3 }, { seq: 4 }, IDLE, IDLE, "a"],
    ["one owner: shares count for nothing", { seq: 3 }, { seq: 4 }, BUSY, IDLE, "a"],
    ["another owner with fewer cpus running", { owner: "x", seq: 9 }, { owner: "y" }, IDLE, BUSY, "a"],
    ["another owner with a higher factor", { owner: "x" }, { owner: "y", seq: 0 }, LOW_FACTOR, IDLE, "b"],
    [
      "another owner: job priority counts for nothing",
      { owner: "x", priority: 9 },
      { owner: "y" },
      BUSY,
      IDLE,
      "b",
    ],
    [
      "equal shares: the job submitted first",
      { owner: "x", seq: 2 },
      { owner: "y", seq: 1 },
      IDLE,
      IDLE,
      "b",
    ],
    [
      "equal shares: the older job",
      { owner: "x", createdAt: 1, seq: 2 },
      { owner: "y", createdAt: 2 },
      IDLE,
      IDLE,
      "a",
    ],
    ['no owner is the owner ""', { owner: undefined, priority: 1, seq: 2 }, { owner: "" }, IDLE, BUSY, "a"],
  ])("%s", (_, a, b, shareA, shareB, first) => {
    const order = compareTurns(turn(a), turn(b), shareA, shareB);
    expect(Math.sign(order)).toBe(first === "a" ? -1 : 1);
    expect(Math.sign(compareTurns(turn(b), turn(a), shareB, shareA))).toBe(-Math.sign(order));
  });

  it("is 0 only for the same place in one owner's queue", () => {
    expect(compareTurns(turn({}), turn({}), IDLE, BUSY)).toBe(0);
  });
});

describe("compareOwnersTurns (between the heads of a pass's lanes: one band, an owner each)", () => {
  it.each<[string, Partial<Turn>, Partial<Turn>, OwnerShare, OwnerShare, -1 | 0 | 1]>([
    ["the smaller share first", { seq: 9 }, { seq: 1 }, IDLE, BUSY, -1],
    ["the higher factor first", { seq: 1 }, { seq: 9 }, LOW_FACTOR, IDLE, 1],
    ["equal shares: the older job", { createdAt: 5, seq: 1 }, { createdAt: 1, seq: 9 }, IDLE, IDLE, 1],
    ["equal shares and age: submitted first", { seq: 1 }, { seq: 2 }, IDLE, IDLE, -1],
    ["job priority counts for nothing", { priority: 9, seq: 2 }, { seq: 1 }, IDLE, IDLE, 1],
    ["alike", {}, {}, IDLE, IDLE, 0],
  ])("%s", (_, a, b, shareA, shareB, expected) => {
    expect(Math.sign(compareOwnersTurns(turn(a), turn(b), shareA, shareB)) + 0).toBe(expected);
    // What compareTurns says between two owners of one band.
    const other = { ...turn(b), owner: "z" };
    expect(Math.sign(compareTurns(turn(a), other, shareA, shareB)) + 0).toBe(expected);
  });
});
