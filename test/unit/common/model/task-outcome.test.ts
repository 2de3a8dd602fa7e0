import { describe, expect, it } from "vitest";
import { renderTaskNext } from "../../../../src/common/model/events.ts";
import type { AttemptOutcome } from "../../../../src/common/model/states.ts";
import {
  grownMemoryMb,
  MAX_RETRY_BACKOFF_SECONDS,
  type MemoryGrowth,
  POISON_LOSS_LIMIT,
  RETRY_JITTER,
  retryDelayMs,
  SYSTEM_FAILURE_BACKOFF_SECONDS,
  SYSTEM_FAILURE_LIMIT,
  type TaskAfterAttempt,
  type TaskAfterSystemFailure,
  taskAfterAttempt,
  taskAfterSystemFailure,
} from "../../../../src/common/model/task-outcome.ts";

const NOW = 1_700_000_000_000;
/** random = 0.5 means no jitter. */
const MID = 0.5;

type TaskCounters = { failures: number; losses: number; resultAttempt: number | null };

function fresh(): TaskCounters {
  return { failures: 0, losses: 0, resultAttempt: null };
}

function end(number: number, outcome: AttemptOutcome, reason: string | null = null) {
  return { number, outcome, reason };
}

type Noted = Omit<TaskAfterAttempt, "next"> & { note: string };

/** taskAfterAttempt with what it did to the task in the words of the job's events. */
function noted(...args: Parameters<typeof taskAfterAttempt>): Noted {
  const { next, ...rest } = taskAfterAttempt(...args);
  return { ...rest, note: renderTaskNext(next, args[1]) };
}

describe("constants", () => {
  it("match the documented defaults and the back-off policy", () => {
    expect(POISON_LOSS_LIMIT).toBe(5);
    expect(MAX_RETRY_BACKOFF_SECONDS).toBe(600);
    expect(RETRY_JITTER).toBe(0.2);
  });
});

describe("retryDelayMs", () => {
  it.each([
    // backoffSeconds, failures, random, ms
    [5, 1, MID, 5_000],
    [5, 2, MID, 10_000],
    [5, 3, MID, 20_000],
    [5, 4, MID, 40_000],
    [5, 0, MID, 5_000],
    [1.5, 2, MID, 3_000],
    [100, 3, MID, 400_000],
    [100, 4, MID, 600_000],
    [100, 50, MID, 600_000],
    [5, 5000, MID, 600_000],
    [1000, 1, MID, 1_000_000],
    [1000, 3, MID, 1_000_000],
    [0, 1, MID, 0],
    [0, 7, 0.99, 0],
    [0, 1, 0, 0],
    [5, 1, 0, 4_000],
    [5, 1, 1, 6_000],
    [5, 1, 0.75, 5_500],
    [5, 2, 0.25, 9_000],
    [100, 10, 0, 480_000],
    [-5, 1, MID, 0],
  ])("backoff %d s after %d failures, random %d -> %d ms", (backoff, failures, random, ms) => {
    expect(retryDelayMs(backoff, failures, random)).toBe(ms);
  });

  it("doubles with each failure until the cap", () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11].map((n) => retryDelayMs(1, n, MID));
    expect(delays).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600].map((s) => s * 1000));
  });

  it("keeps jitter within ±20 % for any random in [0, 1)", () => {
    for (const failures of [1, 2, 3, 20]) {
      const base = retryDelayMs(7, failures, MID);
      for (let i = 0; i < 100; i++) {
        const random = i / 100;
        const delay = retryDelayMs(7, failures, random);
        expect(delay).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
        expect(delay).toBeLessThanOrEqual(Math.ceil(base * 1.2));
      }
    }
  });

  it("is monotonic in random", () => {
    const delays = [0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999].map((r) => retryDelayMs(10, 2, r));
    expect([...delays].sort((a, b) => a - b)).toEqual(delays);
    expect(delays[0]).toBeLessThan(delays[delays.length - 1]);
  });

  it("returns whole milliseconds", () => {
    expect(Number.isInteger(retryDelayMs(0.3333, 3, 0.123))).toBe(true);
  });
});

describe("taskAfterAttempt", () => {
  const retry3 = { maxAttempts: 3, backoffSeconds: 5 };

  it("success sets resultAttempt to the attempt's number", () => {
    expect(
      noted({ failures: 1, losses: 2, resultAttempt: null }, end(4, "succeeded"), retry3, NOW, MID),
    ).toEqual({
      state: "succeeded",
      failures: 1,
      losses: 2,
      notBefore: null,
      resultAttempt: 4,
      note: "succeeded",
    } satisfies Noted);
  });

  it("a failure with retries left goes pending after the back-off", () => {
    const next = noted(fresh(), end(1, "failed", "exit code 2"), retry3, NOW, MID);
    expect(next).toEqual({
      state: "pending",
      failures: 1,
      losses: 0,
      notBefore: NOW + 5_000,
      resultAttempt: null,
      note: "failed; retry 2 of 3 in 5.0 s",
    });
  });

  it("with maxAttempts 3: pending, pending, then failed on the 3rd failure", () => {
    let task = fresh();
    const states: string[] = [];
    const notBefores: (number | null)[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const next = noted(task, end(attempt, "failed", "exit code 1"), retry3, NOW, MID);
      states.push(next.state);
      notBefores.push(next.notBefore);
      task = next;
    }
    expect(states).toEqual(["pending", "pending", "failed"]);
    expect(notBefores).toEqual([NOW + 5_000, NOW + 10_000, null]);
    expect(task.failures).toBe(3);
  });

  it("the final failure says how many attempts were used and why", () => {
    const next = noted(
      { failures: 2, losses: 0, resultAttempt: null },
      end(3, "failed", "exit code 1"),
      retry3,
      NOW,
      MID,
    );
    expect(next.state).toBe("failed");
    expect(next.note).toBe("failed (3 of 3 attempts used): exit code 1");
  });

  it.each([
    [1, 0, "failed"],
    [1, 1, "failed"],
    [2, 0, "pending"],
    [2, 1, "failed"],
    [3, 1, "pending"],
    [3, 2, "failed"],
  ])("maxAttempts %d with %d failures before -> %s", (maxAttempts, failures, state) => {
    const next = noted(
      { failures, losses: 0, resultAttempt: null },
      end(failures + 1, "failed"),
      { maxAttempts, backoffSeconds: 5 },
      NOW,
      MID,
    );
    expect(next.state).toBe(state);
    expect(next.failures).toBe(failures + 1);
  });

  it("timed_out counts as a failure", () => {
    const first = noted(fresh(), end(1, "timed_out"), { maxAttempts: 2, backoffSeconds: 1 }, NOW, MID);
    expect(first).toMatchObject({ state: "pending", failures: 1, losses: 0, notBefore: NOW + 1_000 });
    expect(first.note).toMatch(/^timed out; retry 2 of 2/);
    const second = noted(first, end(2, "timed_out"), { maxAttempts: 2, backoffSeconds: 1 }, NOW, MID);
    expect(second).toMatchObject({ state: "failed", failures: 2, notBefore: null });
    expect(second.note).toBe("timed out (2 of 2 attempts used)");
  });

  it("0 s back-off retries at once (notBefore null)", () => {
    const next = noted(fresh(), end(1, "failed"), { maxAttempts: 2, backoffSeconds: 0 }, NOW, 0.9);
    expect(next).toMatchObject({ state: "pending", failures: 1, notBefore: null });
  });

  it("the back-off grows with the failures and follows the jitter", () => {
    const next = noted(
      { failures: 2, losses: 0, resultAttempt: null },
      end(3, "failed"),
      { maxAttempts: 10, backoffSeconds: 5 },
      NOW,
      0,
    );
    // 3rd failure: 5 s * 2^2 = 20 s, random 0 -> -20 % = 16 s.
    expect(next.notBefore).toBe(NOW + 16_000);
  });

  it("lost does not use up the retry budget", () => {
    const next = noted(
      fresh(),
      end(1, "lost", "host s1 lost"),
      { maxAttempts: 1, backoffSeconds: 5 },
      NOW,
      MID,
    );
    expect(next).toEqual({
      state: "pending",
      failures: 0,
      losses: 1,
      notBefore: null,
      resultAttempt: null,
      note: "lost (host s1 lost); restarting",
    });
  });

  it("the 5th loss fails the task as poison", () => {
    let task = fresh();
    const states: string[] = [];
    for (let attempt = 1; attempt <= POISON_LOSS_LIMIT; attempt++) {
      const next = noted(task, end(attempt, "lost"), retry3, NOW, MID);
      states.push(next.state);
      task = next;
    }
    expect(states).toEqual(["pending", "pending", "pending", "pending", "failed"]);
    expect(task).toMatchObject({ failures: 0, losses: 5, note: "poison task: lost 5 times" });
  });

  it("losses and failures are counted apart", () => {
    const task = { failures: 2, losses: 4, resultAttempt: null };
    const failed = noted(task, end(7, "failed"), { maxAttempts: 4, backoffSeconds: 5 }, NOW, MID);
    expect(failed).toMatchObject({ state: "pending", failures: 3, losses: 4 });
    const lost = noted(task, end(7, "lost"), { maxAttempts: 4, backoffSeconds: 5 }, NOW, MID);
    expect(lost).toMatchObject({ state: "failed", failures: 2, losses: 5 });
  });

  it.each(["preempted", "migrated"] as const)(
    "%s goes pending without touching failures or losses",
    (outcome) => {
      const task = { failures: 2, losses: 4, resultAttempt: null };
      const next = noted(
        task,
        end(9, outcome, "better host"),
        { maxAttempts: 3, backoffSeconds: 5 },
        NOW,
        MID,
      );
      expect(next).toEqual({
        state: "pending",
        failures: 2,
        losses: 4,
        notBefore: null,
        resultAttempt: null,
        note: `${outcome}; restarting`,
      });
    },
  );

  it("many preemptions never fail the task", () => {
    let task = fresh();
    for (let attempt = 1; attempt <= 20; attempt++) {
      const next = noted(task, end(attempt, "preempted"), retry3, NOW, MID);
      expect(next.state).toBe("pending");
      task = next;
    }
    expect(task).toMatchObject({ failures: 0, losses: 0 });
  });

  it("cancelled ends the task cancelled and keeps its counters", () => {
    const next = noted(
      { failures: 1, losses: 1, resultAttempt: null },
      end(3, "cancelled"),
      retry3,
      NOW,
      MID,
    );
    expect(next).toEqual({
      state: "cancelled",
      failures: 1,
      losses: 1,
      notBefore: null,
      resultAttempt: null,
      note: "cancelled",
    });
  });

  it.each(["failed", "timed_out", "lost", "preempted", "migrated", "cancelled"] as const)(
    "%s does not set resultAttempt",
    (outcome) => {
      expect(noted(fresh(), end(1, outcome), retry3, NOW, MID).resultAttempt).toBeNull();
    },
  );
});

describe("taskAfterSystemFailure", () => {
  it("keeps its limit and the shortest back-off", () => {
    expect([SYSTEM_FAILURE_LIMIT, SYSTEM_FAILURE_BACKOFF_SECONDS]).toEqual([5, 1]);
  });

  it.each<[string, number, number, TaskAfterSystemFailure]>([
    [
      "the first goes round again after the job's back-off",
      0,
      5,
      {
        failures: 2,
        losses: 1,
        resultAttempt: null,
        systemFailures: 1,
        state: "pending",
        notBefore: NOW + 5_000,
        next: { is: "systemRetry", delayMs: 5_000 },
      },
    ],
    [
      "a back-off shorter than a second waits one, doubled per system failure",
      1,
      0,
      {
        failures: 2,
        losses: 1,
        resultAttempt: null,
        systemFailures: 2,
        state: "pending",
        notBefore: NOW + 2_000,
        next: { is: "systemRetry", delayMs: 2_000 },
      },
    ],
    [
      "the fourth waits 8 back-offs",
      3,
      5,
      {
        failures: 2,
        losses: 1,
        resultAttempt: null,
        systemFailures: 4,
        state: "pending",
        notBefore: NOW + 40_000,
        next: { is: "systemRetry", delayMs: 40_000 },
      },
    ],
    [
      "the fifth fails the task",
      4,
      5,
      {
        failures: 2,
        losses: 1,
        resultAttempt: null,
        systemFailures: 5,
        state: "failed",
        notBefore: null,
        next: { is: "systemFailed", systemFailures: 5 },
      },
    ],
  ])("%s", (_, systemFailures, backoffSeconds, after) => {
    const task = { failures: 2, losses: 1, resultAttempt: null, systemFailures };
    expect(taskAfterSystemFailure(task, { maxAttempts: 3, backoffSeconds }, NOW, MID)).toEqual(after);
  });
});

describe("grownMemoryMb", () => {
  it.each<[string, number, MemoryGrowth, number | null]>([
    ["no growth asked", 100, {}, null],
    ["grown by its factor", 100, { memoryGrowth: 1.5 }, 150],
    ["up to a whole MB", 100, { memoryGrowth: 1.001 }, 101],
    ["a factor of 1: no growth", 100, { memoryGrowth: 1 }, null],
    ["up to the cap", 100, { memoryGrowth: 2, maxMemoryMb: 150 }, 150],
    ["under the cap", 100, { memoryGrowth: 1.2, maxMemoryMb: 150 }, 120],
    ["at the cap already", 150, { memoryGrowth: 2, maxMemoryMb: 150 }, null],
    ["over the cap already", 200, { memoryGrowth: 2, maxMemoryMb: 150 }, null],
    ["no memory to grow", 0, { memoryGrowth: 2 }, null],
  ])("%s", (_, currentMb, retry, grown) => {
    expect(grownMemoryMb(currentMb, retry)).toBe(grown);
  });
});
