// The Rescheduler's rules (scheduler/stages/rescheduling.ts) at their edges: the gain and the time
// on another host when a figure is zero, the reasons a task is not considered for a move (each on
// its own, and each limit exactly reached), the best move among several hosts, and the speed a
// target needs before its cost is counted.

import { describe, expect, it } from "vitest";
import type { AttemptProgress } from "../../../../src/broker/scheduler/estimate.ts";
import { DEFAULT_POLICY } from "../../../../src/broker/scheduler/policy.ts";
import {
  bestMove,
  migrationGain,
  notMovable,
  remainingOnHost,
  speedNeeded,
} from "../../../../src/broker/scheduler/stages/rescheduling.ts";
import type { HostView, RunningTaskView } from "../../../../src/broker/scheduler/view.ts";
import { facts } from "../../../helpers/core-harness.ts";

const NOW = 1_000_000;
const S = 1000;

/** An attempt that started `startedAgo` s ago and is at `fraction` now: 10 % in 100 s leaves 900 s. */
function progress(fraction: number, startedAgo: number): AttemptProgress {
  return { startedAt: NOW - startedAgo * S, baseline: null, last: { fraction, at: NOW } };
}

function task(extra: Partial<RunningTaskView> = {}): RunningTaskView {
  return {
    job: { id: "j", priority: 0, cpus: 1, memoryMb: 0, requirements: null, rank: null },
    taskIndex: 0,
    attempt: 1,
    host: "slow",
    stopping: false,
    progress: progress(0.1, 100),
    checkpointBytes: 0,
    startedByPreemption: false,
    lastMovedAt: null,
    ...extra,
  };
}

function host(name: string, speed: number): HostView {
  return {
    name,
    state: "ready",
    connected: true,
    slots: 1,
    slotsFree: 1,
    memoryFreeMb: 8192,
    facts: { ...facts(name), speed },
  };
}

describe("migrationGain and remainingOnHost at zero", () => {
  it.each([
    ["nothing left here", 0, 0, 0, Number.NEGATIVE_INFINITY],
    ["less than nothing left here", -5, 0, 0, Number.NEGATIVE_INFINITY],
    ["half the time there, no cost", 100, 50, 0, 0.5],
  ])("gain: %s", (_, here, there, cost, gain) => {
    expect(migrationGain(here, there, cost)).toBe(gain);
  });

  it.each([
    ["a host of speed 0 here", 100, 0, 5, Number.POSITIVE_INFINITY],
    ["a host of speed 0 there", 100, 5, 0, Number.POSITIVE_INFINITY],
    ["a negative speed here", 100, -1, 5, Number.POSITIVE_INFINITY],
    ["a negative speed there", 100, 5, -1, Number.POSITIVE_INFINITY],
    ["nothing left, on a host of speed 0 there", 0, 5, 0, Number.POSITIVE_INFINITY],
    ["twice as fast there", 100, 5, 10, 50],
  ])("remaining there: %s", (_, remaining, here, there, expected) => {
    expect(remainingOnHost(remaining, here, there)).toBe(expected);
  });
});

describe("notMovable, each reason on its own and at its limit", () => {
  // Rates of a power of two, so that the times compare exactly: 1/128 of the work a second.
  const policy = { discoverySeconds: 60, minRemainingFraction: 0.5 };
  it.each<[string, Partial<RunningTaskView>, string | null]>([
    ["a task being stopped, with all else movable", { stopping: true }, "it is already stopping"],
    [
      "no progress reported",
      { progress: { startedAt: NOW - 100 * S, baseline: null, last: null } },
      "its remaining time cannot be estimated yet",
    ],
    [
      "progress too small to measure",
      { progress: progress(0.0001, 100) },
      "its remaining time cannot be estimated yet",
    ],
    // Half done in 64 s: 128 s predicted, 64 s left: exactly half its time, still movable.
    ["exactly the least fraction of its time left", { progress: progress(0.5, 64) }, null],
    // 5/8 done in 80 s: 128 s predicted, 48 s left.
    ["under it", { progress: progress(0.625, 80) }, "less than 50 % of its time is left"],
    ["moved exactly one discovery period ago", { lastMovedAt: NOW - 60 * S }, null],
    [
      "moved a moment less than one discovery period ago",
      { lastMovedAt: NOW - 60 * S + 1 },
      "it moved less than one discovery period ago",
    ],
  ])("%s", (_, extra, reason) => {
    expect(notMovable(task({ progress: progress(0.25, 32), ...extra }), NOW, policy)).toBe(reason);
  });

  it("a task that never moved is movable whatever the clock reads, its start included", () => {
    const atZero = { startedAt: -32 * S, baseline: null, last: { fraction: 0.25, at: 0 } };
    expect(notMovable(task({ progress: atZero, lastMovedAt: null }), 0, policy)).toBeNull();
  });
});

describe("bestMove", () => {
  const slow = host("slow", 5);
  it("none without an estimate of the time left, or without a checkpoint", () => {
    const targets = [host("fast", 50)];
    expect(
      bestMove(
        task({ progress: { startedAt: NOW, baseline: null, last: null } }),
        slow,
        targets,
        NOW,
        DEFAULT_POLICY,
      ),
    ).toBeNull();
    expect(bestMove(task({ checkpointBytes: null }), slow, targets, NOW, DEFAULT_POLICY)).toBeNull();
  });

  it("never to its own host, whatever its speed reads, nor to one no faster", () => {
    expect(bestMove(task(), slow, [host("slow", 50)], NOW, DEFAULT_POLICY)).toBeNull();
    expect(bestMove(task(), slow, [host("same", 5)], NOW, DEFAULT_POLICY)).toBeNull();
    expect(bestMove(task(), slow, [host("slower", 4)], NOW, DEFAULT_POLICY)?.host ?? null).toBeNull();
  });

  it("the largest gain among the hosts, the first of equal ones", () => {
    const move = bestMove(
      task(),
      slow,
      [host("b", 10), host("a", 50), host("c", 50), host("d", 25)],
      NOW,
      DEFAULT_POLICY,
    );
    expect(move).toMatchObject({ host: "a", remainingHere: 900, remainingThere: 90 });
    expect(move?.gain).toBeCloseTo(0.9, 9);
  });
});

describe("speedNeeded", () => {
  it.each([
    ["here 5, a gain of 0.3", 5, 0.3, 5 / 0.7],
    ["here 7, no gain asked", 7, 0, 7],
    ["here 10, a gain of 0.5", 10, 0.5, 20],
    ["a gain of 1 cannot be had", 5, 1, Number.POSITIVE_INFINITY],
    ["nor more", 5, 1.5, Number.POSITIVE_INFINITY],
    ["nor a gain of 1 from a host of speed 0", 0, 1, Number.POSITIVE_INFINITY],
  ])("%s", (_, here, threshold, needed) => {
    expect(speedNeeded(here, threshold)).toBeCloseTo(needed, 9);
  });
});
