// Whom a pending job waits behind, for explain: whether one job has its turn before another when
// a pass starts (the order of turns, owners by their shares), and the sentence naming the jobs
// ahead, other users' counted but not named.

import { describe, expect, it } from "vitest";
import type { OwnerShare } from "../../../../src/broker/scheduler/fair-share.ts";
import { comesBefore, describeAhead, hasWorkNow } from "../../../../src/broker/scheduler/queue-position.ts";
import type { ConstrainedTask } from "../../../../src/broker/scheduler/view.ts";
import { jobView, NOW, readyTasks } from "../../../helpers/scheduler-views.ts";

describe("comesBefore", () => {
  it.each([
    [{ priority: 1, seq: 2 }, { priority: 0, seq: 1 }, true],
    [{ priority: 0, seq: 1 }, { priority: 0, seq: 2 }, true],
    [{ priority: 0, seq: 2 }, { priority: 0, seq: 1 }, false],
    [{ priority: 0, seq: 2, owner: "light" }, { priority: 0, seq: 1, owner: "heavy" }, true],
    [{ priority: 0, seq: 1, owner: "heavy" }, { priority: 0, seq: 2, owner: "light" }, false],
    [{ priority: 0, seq: 2, owner: "light" }, { priority: 0, seq: 1, owner: "light" }, false],
    [{ priority: 0, seq: 2, owner: "x" }, { priority: 0, seq: 1, owner: "y" }, false],
  ] as const)("%o before %o: %s", (a, b, expected) => {
    const shares = new Map<string, OwnerShare>([["heavy", { runningCpus: 4, recentCpuSeconds: 0 }]]);
    expect(comesBefore({ createdAt: 0, ...a }, { createdAt: 0, ...b }, shares)).toBe(expected);
  });
});

describe("comesBefore, owners' shares", () => {
  // Jobs without an owner have their share under the empty name.
  it.each([
    ["the owner-less heavy, another owner's job first", { seq: 1 }, { seq: 2, owner: "y" }, false],
    ["the owner-less heavy, behind another owner's job", { seq: 2, owner: "y" }, { seq: 1 }, true],
  ] as const)("%s", (_, a, b, expected) => {
    const shares = new Map<string, OwnerShare>([["", { runningCpus: 4, recentCpuSeconds: 0 }]]);
    expect(
      comesBefore({ priority: 0, createdAt: 0, ...a }, { priority: 0, createdAt: 0, ...b }, shares),
    ).toBe(expected);
  });

  it("no job comes before itself", () => {
    const job = { priority: 0, createdAt: 0, seq: 1, owner: "x" };
    expect(comesBefore(job, job, new Map())).toBe(false);
  });
});

describe("hasWorkNow", () => {
  const constrained = (...indexes: number[]) => ({
    constrainedTasks: (): ConstrainedTask[] => indexes.map((index) => ({ index, allows: () => true })),
  });
  it.each([
    ["a ready task", () => jobView("1"), true],
    ["no task ready, none constrained", () => jobView("1", readyTasks()), false],
    [
      "no task ready, an empty list of constrained ones",
      () => jobView("1", { ...readyTasks(), ...constrained() }),
      false,
    ],
    [
      "no task ready, one constrained to some hosts",
      () => jobView("1", { ...readyTasks(), ...constrained(0) }),
      true,
    ],
  ] as const)("%s", (_, job, expected) => {
    expect(hasWorkNow(job(), NOW)).toBe(expected);
  });
});

describe("describeAhead", () => {
  const p = (id: string, priority: number) => ({ id, priority });
  it.each([
    [[p("12", 5)], 10, "behind 1 job in the queue: 12 (priority 5)"],
    [[p("12", 5), p("15", 5), p("16", 5)], 10, "behind 3 jobs in the queue: 12, 15, 16 (priority 5)"],
    [
      [p("3", 7), p("12", 5), p("15", 5)],
      10,
      "behind 3 jobs in the queue: 3 (priority 7), 12, 15 (priority 5)",
    ],
    [
      [p("1", 0), p("2", 0), p("3", 0), p("4", 0)],
      2,
      "behind 4 jobs in the queue: 1, 2 (priority 0) and 2 more",
    ],
  ] as const)("%o", (ahead, namedAtMost, sentence) => {
    expect(describeAhead(ahead, namedAtMost)).toBe(sentence);
  });

  // A user's explain: other users' jobs ahead are counted, never named.
  it.each([
    [[p("12", 5)], 1, "behind 2 jobs in the queue: 12 (priority 5) and 1 job of other users"],
    [[], 1, "behind 1 job of other users in the queue"],
    [[], 3, "behind 3 jobs of other users in the queue"],
    [
      [p("1", 0), p("2", 0), p("3", 0)],
      4,
      "behind 7 jobs in the queue: 1, 2 (priority 0) and 1 more and 4 jobs of other users",
    ],
  ] as const)("%o with %d of other users", (ahead, hidden, sentence) => {
    expect(describeAhead(ahead, 2, hidden)).toBe(sentence);
  });
});
