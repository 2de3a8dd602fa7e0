// GrADS preemption and rescheduling as pure rules: remaining-time estimates, the Permission
// Service's wait-or-preempt decision, the Rescheduler's gain, and the stops a pass plans.

import { describe, expect, it } from "vitest";
import {
  type AttemptProgress,
  predictedSeconds,
  progressMade,
  remainingSeconds,
} from "../../../../src/broker/scheduler/estimate.ts";
import { rankedAtOrBelow } from "../../../../src/broker/scheduler/metascheduling.ts";
import { DEFAULT_POLICY } from "../../../../src/broker/scheduler/policy.ts";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import { decidePreemption, notPreemptible } from "../../../../src/broker/scheduler/stages/preemption.ts";
import {
  bestMove,
  migrationCostSeconds,
  migrationGain,
  notMovable,
  remainingOnHost,
} from "../../../../src/broker/scheduler/stages/rescheduling.ts";
import { observedTransferRate } from "../../../../src/broker/scheduler/transfer-rate.ts";
import type {
  HostView,
  JobView,
  MetaschedulingPolicy,
  RunningTaskView,
} from "../../../../src/broker/scheduler/view.ts";
import { compileExpression } from "../../../../src/common/model/cel.ts";
import { renderEvent } from "../../../../src/common/model/events.ts";
import type { HostFacts } from "../../../../src/common/model/host-facts.ts";
import { renderStopReason } from "../../../../src/common/model/stop-reasons.ts";

const NOW = 1_000_000;
const S = 1000;

/** Progress of an attempt that started `startedAgo` s ago from `from` and is at `fraction` now. */
function progress(fraction: number, startedAgo: number, from: number | null = null): AttemptProgress {
  return {
    startedAt: NOW - startedAgo * S,
    baseline: from === null ? null : { fraction: from, at: NOW - startedAgo * S },
    last: { fraction, at: NOW },
  };
}

describe("remaining-time estimates", () => {
  it.each<[string, AttemptProgress, number | null, number | null]>([
    ["half done in 100 s: 100 s left, 200 s in all", progress(0.5, 100), 100, 200],
    ["a quarter in 100 s: 300 s left", progress(0.25, 100), 300, 400],
    ["restarted at 0.5, now 0.6 after 10 s: 40 s left", progress(0.6, 10, 0.5), 40, 100],
    ["no progress yet: unknown", progress(0, 100), null, null],
    ["no report at all: unknown", { startedAt: NOW - 10 * S, baseline: null, last: null }, null, null],
    ["done: nothing left", progress(1, 50), 0, 50],
  ])("%s", (_, sample, remaining, predicted) => {
    const left = remainingSeconds(sample, NOW);
    if (remaining === null) expect(left).toBeNull();
    else expect(left).toBeCloseTo(remaining, 6);
    const whole = predictedSeconds(sample);
    if (predicted === null) expect(whole).toBeNull();
    else expect(whole).toBeCloseTo(predicted, 6);
  });

  it("time since the last report counts as done at the same rate", () => {
    const sample: AttemptProgress = {
      startedAt: NOW - 100 * S,
      baseline: null,
      last: { fraction: 0.5, at: NOW - 20 * S },
    };
    // 0.5 in 80 s: 80 s left at the report, 20 s of it since.
    expect(remainingSeconds(sample, NOW)).toBeCloseTo(60, 6);
  });

  it("progress made counts from the restart's baseline", () => {
    expect(progressMade(progress(0.7, 10, 0.6))).toBeCloseTo(0.1, 9);
    expect(progressMade(progress(0.3, 10))).toBeCloseTo(0.3, 9);
  });
});

function facts(name: string, speed = 1, extra: Partial<HostFacts> = {}): HostFacts {
  return {
    name,
    pool: "default",
    os: "linux",
    arch: "x86_64",
    cpus: 1,
    memoryMb: 8192,
    memFreeMb: 8192,
    load1: 0,
    cpuFree: 1,
    diskFreeMb: 1000,
    speed,
    labels: {},
    slotsFree: 0,
    ...extra,
  };
}

function host(
  name: string,
  slots: number,
  slotsFree: number,
  speed = 1,
  extra: Partial<HostFacts> = {},
): HostView {
  return {
    name,
    state: "ready",
    connected: true,
    slots,
    slotsFree,
    memoryFreeMb: 8192,
    facts: facts(name, speed, extra),
  };
}

function job(id: string, priority = 0, extra: Partial<JobView> = {}): JobView {
  return {
    id,
    priority,
    createdAt: 0,
    seq: 0,
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: null,
    *readyTasks() {
      yield 0;
    },
    ...extra,
  };
}

function running(
  id: string,
  hostName: string,
  sample: AttemptProgress,
  extra: Partial<RunningTaskView> & { priority?: number; rank?: string } = {},
): RunningTaskView {
  const { priority, rank, ...rest } = extra;
  return {
    job: job(id, priority ?? 0, { rank: rank ? compileExpression(rank) : null }),
    taskIndex: 0,
    attempt: 1,
    host: hostName,
    stopping: false,
    progress: sample,
    checkpointBytes: 1000,
    startedByPreemption: false,
    lastMovedAt: null,
    ...rest,
  };
}

describe("notPreemptible (GrADS: 20 % progress, not started by a preemption)", () => {
  it.each<[string, RunningTaskView, string | null]>([
    ["past 20 % with a checkpoint: preemptible", running("a", "h", progress(0.3, 100)), null],
    ["under 20 %", running("a", "h", progress(0.1, 100)), "progress 0.10 since its start, under 0.2"],
    [
      "20 % in all but only 0.05 since its restart",
      running("a", "h", progress(0.55, 10, 0.5)),
      "progress 0.05 since its start, under 0.2",
    ],
    [
      "started by a preemption",
      running("a", "h", progress(0.5, 100), { startedByPreemption: true }),
      "it was started by a preemption",
    ],
    [
      "no checkpoint",
      running("a", "h", progress(0.5, 100), { checkpointBytes: null }),
      "it has no checkpoint",
    ],
    [
      "no progress reported",
      running("a", "h", { startedAt: NOW, baseline: null, last: null }),
      "it reports no progress",
    ],
    ["already stopping", running("a", "h", progress(0.5, 100), { stopping: true }), "it is already stopping"],
  ])("%s", (_, task, reason) => {
    expect(notPreemptible(task, DEFAULT_POLICY)).toBe(reason);
  });
});

describe("decidePreemption (GrADS Permission Service)", () => {
  const full = [host("h1", 1, 0), host("h2", 1, 0)];
  const free = new Map(full.map((each) => [each.name, { slotsFree: 0, memoryFreeMb: 8192 }]));
  const policy = { ...DEFAULT_POLICY, preemptWaitSeconds: 300 };

  it("stops the preemptible lower-priority task with the most work left", () => {
    const decision = decidePreemption(
      job("high", 10),
      full,
      free,
      [running("a", "h1", progress(0.5, 1000)), running("b", "h2", progress(0.25, 1000))],
      NOW,
      policy,
    );
    expect(decision).toMatchObject({ kind: "preempt", victim: { job: { id: "b" } } });
    expect(decision.kind === "preempt" && decision.remainingSeconds).toBeCloseTo(3000, 6);
  });

  it("waits when a task that would make room ends within the wait", () => {
    const decision = decidePreemption(
      job("high", 10),
      full,
      free,
      [running("a", "h1", progress(0.99, 1000)), running("b", "h2", progress(0.25, 1000))],
      NOW,
      policy,
    );
    expect(decision).toMatchObject({ kind: "wait", until: { job: { id: "a" } } });
  });

  it("waits for a task already being stopped", () => {
    const decision = decidePreemption(
      job("high", 10),
      full,
      free,
      [running("a", "h1", progress(0.5, 1000), { stopping: true }), running("b", "h2", progress(0.25, 1000))],
      NOW,
      policy,
    );
    expect(decision.kind).toBe("wait");
  });

  it.each<[string, RunningTaskView[]]>([
    ["equal priority", [running("a", "h1", progress(0.5, 1000), { priority: 10 })]],
    ["higher priority", [running("a", "h1", progress(0.5, 1000), { priority: 11 })]],
    ["under the minimum progress", [running("a", "h1", progress(0.1, 1000))]],
    ["on a host the job may not use", [running("a", "elsewhere", progress(0.5, 1000))]],
  ])("never preempts: %s", (_, tasks) => {
    expect(decidePreemption(job("high", 10), full, free, tasks, NOW, policy).kind).toBe("none");
  });

  it("only where the stop makes room: a 2-cpu job cannot use a 1-cpu task's slot on a full host", () => {
    const decision = decidePreemption(
      job("high", 10, { cpus: 2 }),
      [host("h1", 2, 0)],
      new Map([["h1", { slotsFree: 0, memoryFreeMb: 8192 }]]),
      [running("a", "h1", progress(0.5, 1000))],
      NOW,
      policy,
    );
    expect(decision.kind).toBe("none");
  });
});

describe("the Rescheduler's gain (GrADS: migrate only above 30 %)", () => {
  it.each([
    ["ten times faster, no cost", 1000, 100, 0, 0.9],
    ["twice as fast, 100 s to move", 1000, 500, 100, 0.4],
    ["twice as fast, 300 s to move: gains 0.2", 1000, 500, 300, 0.2],
    ["slower there: negative", 100, 200, 0, -1],
  ])("%s", (_, here, there, cost, gain) => {
    expect(migrationGain(here, there, cost)).toBeCloseTo(gain, 9);
  });

  it("scales remaining time by speed and costs the checkpoint moved twice", () => {
    expect(remainingOnHost(1000, 5, 50)).toBeCloseTo(100, 9);
    expect(migrationCostSeconds(100_000_000, 50_000_000)).toBeCloseTo(4, 9);
  });

  const policy: MetaschedulingPolicy = { ...DEFAULT_POLICY, discoverySeconds: 60 };
  it.each<[string, RunningTaskView, string | null]>([
    ["a checkpointed task with most of its time left", running("a", "h", progress(0.2, 100)), null],
    [
      "no checkpoint",
      running("a", "h", progress(0.2, 100), { checkpointBytes: null }),
      "it has no checkpoint",
    ],
    [
      "under 10 % of its time left",
      running("a", "h", progress(0.95, 100)),
      "less than 10 % of its time is left",
    ],
    [
      "moved 30 s ago",
      running("a", "h", progress(0.2, 100), { lastMovedAt: NOW - 30 * S }),
      "it moved less than one discovery period ago",
    ],
    ["moved 90 s ago", running("a", "h", progress(0.2, 100), { lastMovedAt: NOW - 90 * S }), null],
    [
      "no progress yet",
      running("a", "h", { startedAt: NOW, baseline: null, last: null }),
      "its remaining time cannot be estimated yet",
    ],
  ])("notMovable: %s", (_, task, reason) => {
    expect(notMovable(task, NOW, policy)).toBe(reason);
  });

  it("bestMove picks the fastest host that ranks at least as high", () => {
    const task = running("a", "slow", progress(0.1, 100), { rank: 'host.labels.tier == "gold" ? 1.0 : 0.0' });
    const slow = host("slow", 1, 0, 5, { labels: { tier: "gold" } });
    const fastSilver = host("fast", 1, 1, 100, { labels: { tier: "silver" } });
    const goldish = host("gold", 1, 1, 50, { labels: { tier: "gold" } });
    const move = bestMove(task, slow, [fastSilver, goldish], NOW, DEFAULT_POLICY);
    expect(move?.host).toBe("gold");
    expect(move?.remainingHere).toBeCloseTo(900, 6);
    expect(move?.remainingThere).toBeCloseTo(90, 6);
  });
});

describe("rankedAtOrBelow (what a job may preempt comes strictly after it)", () => {
  type Keyed = Parameters<typeof rankedAtOrBelow>[0];
  it.each<[string, Keyed, Keyed, boolean]>([
    [
      "a lower tier, whatever its priority",
      { qosPriority: 0, priority: 9 },
      { qosPriority: 1, priority: 0 },
      true,
    ],
    [
      "a higher tier, whatever its priority",
      { qosPriority: 1, priority: 0 },
      { qosPriority: 0, priority: 9 },
      false,
    ],
    [
      "the same tier, a lower priority",
      { qosPriority: 1, priority: 1 },
      { qosPriority: 1, priority: 2 },
      true,
    ],
    ["the same tier and priority", { qosPriority: 1, priority: 2 }, { qosPriority: 1, priority: 2 }, true],
    [
      "the same tier, a higher priority",
      { qosPriority: 1, priority: 3 },
      { qosPriority: 1, priority: 2 },
      false,
    ],
    [
      "no tier is the default tier (0): a lower priority",
      { priority: 0 },
      { qosPriority: 0, priority: 5 },
      true,
    ],
    [
      "no tier is the default tier (0): against no tier",
      { qosPriority: 0, priority: 0 },
      { priority: 5 },
      true,
    ],
  ])("%s", (_, a, b, expected) => {
    expect(rankedAtOrBelow(a, b)).toBe(expected);
  });
});

describe("a scheduling pass with preemption and rescheduling", () => {
  it("plans one preemption for a blocked higher-priority job, with its numbers", () => {
    const hosts = [host("h1", 1, 0), host("h2", 1, 0)];
    const tasks = [running("low-a", "h1", progress(0.5, 1000)), running("low-b", "h2", progress(0.3, 1000))];
    const plan = schedule({ now: NOW, jobs: [job("high", 10)], hosts, running: () => tasks });
    expect(plan.place).toStrictEqual([]);
    expect(plan.stop).toStrictEqual([]);
    // One entry: the stop, and the placement whose room it makes (kept for it on the same host).
    expect(plan.preempt).toHaveLength(1);
    expect(plan.preempt[0].stop).toMatchObject({
      jobId: "low-b",
      intent: { outcome: "preempted" },
      note: { kind: "preempt", data: { for: "high", host: "h2" } },
    });
    expect(renderStopReason(plan.preempt[0].stop.intent.reason)).toBe("preempted for job high (priority 10)");
    expect(plan.preempt[0].place).toStrictEqual({ kind: "task", jobId: "high", taskIndex: 0, host: "h2" });
  });

  it("asks to look again while waiting for a task about to end", () => {
    const hosts = [host("h1", 1, 0)];
    const tasks = [running("low", "h1", progress(0.99, 1000))];
    const plan = schedule({ now: NOW, jobs: [job("high", 10)], hosts, running: () => tasks });
    expect(plan.stop).toStrictEqual([]);
    expect(plan.preempt).toStrictEqual([]);
    expect(plan.recheckAt).toBeGreaterThan(NOW);
  });

  it("with preemption off, nothing is stopped", () => {
    const hosts = [host("h1", 1, 0)];
    const tasks = [running("low", "h1", progress(0.3, 1000))];
    const plan = schedule({
      now: NOW,
      jobs: [job("high", 10)],
      hosts,
      running: () => tasks,
      policy: { preempt: false },
    });
    expect(plan.stop).toStrictEqual([]);
    expect(plan.preempt).toStrictEqual([]);
  });

  it("moves a task from a slow host to a fast one with room, naming the gain", () => {
    const hosts = [host("slow", 1, 0, 5), host("fast", 1, 1, 50)];
    const tasks = [running("long", "slow", progress(0.1, 100))];
    const plan = schedule({ now: NOW, jobs: [], hosts, running: () => tasks });
    expect(plan.stop).toHaveLength(1);
    expect(plan.stop[0]).toMatchObject({
      jobId: "long",
      intent: { outcome: "migrated" },
      migrateTo: { to: "fast" },
      note: { kind: "reschedule" },
    });
    const note = plan.stop[0].note!;
    expect(renderEvent(note)).toMatch(
      /migrated to fast: estimated gain 0\.90 \(remaining 900 s here, 90 s \+ 0 s move there\)/,
    );
  });

  it("moves spread over the fast hosts as each fills", () => {
    const hosts = [host("slow", 3, 0, 5), host("fast-1", 1, 1, 50), host("fast-2", 1, 1, 50)];
    const tasks = ["a", "b", "c"].map((id) => running(id, "slow", progress(0.1, 100)));
    const plan = schedule({ now: NOW, jobs: [], hosts, running: () => tasks });
    expect(plan.stop.map((stop) => stop.migrateTo?.to).sort()).toStrictEqual(["fast-1", "fast-2"]);
  });

  it("a pending task gets the room before a move does", () => {
    const hosts = [host("slow", 1, 0, 5), host("fast", 1, 1, 50)];
    const tasks = [running("long", "slow", progress(0.1, 100))];
    const plan = schedule({ now: NOW, jobs: [job("waiting")], hosts, running: () => tasks });
    expect(plan.place.map((p) => p.host)).toStrictEqual(["fast"]);
    expect(plan.stop).toStrictEqual([]);
  });

  it("does not move when the move's cost brings the gain under the threshold, on a host fast enough to pass the speed filter", () => {
    // 900 s left on speed 5, 90 s on speed 50: gain 0.9 with no cost; a checkpoint that takes 720 s
    // to move (twice its size at the rate) leaves 0.1, above nothing but under the threshold (0.3).
    const hosts = [host("slow", 1, 0, 5), host("fast", 1, 1, 50)];
    const bytes = (720 * DEFAULT_POLICY.transferBytesPerSecond) / 2;
    const heavy = running("heavy", "slow", progress(0.1, 100), { checkpointBytes: bytes });
    const move = bestMove(heavy, hosts[0], [hosts[1]], NOW, DEFAULT_POLICY);
    expect(move?.gain).toBeCloseTo(0.1, 6);
    expect(schedule({ now: NOW, jobs: [], hosts, running: () => [heavy] }).stop).toStrictEqual([]);
    // The same task with a checkpoint that moves in 90 s (gain 0.8) moves.
    const light = running("light", "slow", progress(0.1, 100), { checkpointBytes: bytes / 8 });
    expect(schedule({ now: NOW, jobs: [], hosts, running: () => [light] }).stop).toHaveLength(1);
  });

  it("does not move when the gain is under the threshold, or the task is nearly done", () => {
    const hosts = [host("slow", 1, 0, 10), host("fast", 1, 1, 12)];
    expect(
      schedule({ now: NOW, jobs: [], hosts, running: () => [running("a", "slow", progress(0.1, 100))] }).stop,
    ).toStrictEqual([]);
    const faster = [host("slow", 1, 0, 5), host("fast", 1, 1, 50)];
    expect(
      schedule({
        now: NOW,
        jobs: [],
        hosts: faster,
        running: () => [running("a", "slow", progress(0.95, 100))],
      }).stop,
    ).toStrictEqual([]);
  });
});

describe("the preemption stage of a pass: which blocked job looks, and for which task", () => {
  /** Two full one-slot hosts, each running a preemptible task of priority 0 (`low-b` has the more work left). */
  const fullHosts = [host("h1", 1, 0), host("h2", 1, 0)];
  const lowTasks = [running("low-a", "h1", progress(0.5, 1000)), running("low-b", "h2", progress(0.3, 1000))];
  const keptFor = (taskIndex: number) => ({
    job: job("high", 10),
    taskIndex,
    host: "h1",
    held: { slots: 0, memoryMb: 0 },
  });

  /** The plan's stops and preemptions in short: "low-b for high/0", a stop alone as "stop low-b", and a recheck. */
  function preemptions(state: Omit<Parameters<typeof schedule>[0], "now">): string[] {
    const plan = schedule({ now: NOW, ...state });
    return [
      ...plan.preempt.map((each) => `${each.stop.jobId} for ${each.place.jobId}/${each.place.taskIndex}`),
      ...plan.stop.map((each) => `stop ${each.jobId}`),
      ...(plan.recheckAt === undefined ? [] : [`recheck in ${plan.recheckAt - NOW} ms`]),
    ];
  }
  const ready = (...indexes: number[]) => ({
    *readyTasks() {
      yield* indexes;
    },
  });

  it.each<[string, Omit<Parameters<typeof schedule>[0], "now">, string[]]>([
    [
      "a blocked job stops the task with the most work left, for its first task",
      { jobs: [job("high", 10)], hosts: fullHosts, running: () => lowTasks },
      ["low-b for high/0"],
    ],
    [
      "a job whose ready tasks this pass placed waits for nothing (no recheck for a task about to end)",
      {
        jobs: [job("high", 10)],
        hosts: [host("h1", 1, 0), host("free", 1, 1)],
        running: () => [running("low", "h1", progress(0.99, 1000))],
      },
      [],
    ],
    [
      "a task with room kept for it already is not named again: the next one is",
      {
        jobs: [job("high", 10, ready(0, 1))],
        hosts: fullHosts,
        running: () => lowTasks,
        reserved: [keptFor(0)],
      },
      ["low-b for high/1"],
    ],
    [
      "every unplaced task with room kept for it: no second preemption",
      { jobs: [job("high", 10)], hosts: fullHosts, running: () => lowTasks, reserved: [keptFor(0)] },
      [],
    ],
    [
      "an array at its throttle, counting the task this pass placed, preempts nothing",
      {
        jobs: [job("high", 10, { ...ready(1, 0), parallel: 2, liveTasks: 1 })],
        hosts: [...fullHosts, host("free", 1, 1)],
        running: () => lowTasks,
      },
      [],
    ],
    [
      "an array below its throttle preempts for the task this pass left",
      {
        jobs: [job("high", 10, { ...ready(1, 0), parallel: 3, liveTasks: 1 })],
        hosts: [...fullHosts, host("free", 1, 1)],
        running: () => lowTasks,
      },
      ["low-b for high/0"],
    ],
    [
      "a job that may run on no host is not one of the eight looked at",
      {
        jobs: [
          ...Array.from({ length: 8 }, (_, i) =>
            job(`nowhere-${i}`, 10, { seq: i, requirements: compileExpression('host.name == "none"') }),
          ),
          job("high", 10, { seq: 9 }),
        ],
        hosts: fullHosts,
        running: () => lowTasks,
      },
      ["low-b for high/0"],
    ],
    [
      "eight blocked jobs looked at, none able to preempt: the ninth is not looked at",
      {
        jobs: [
          ...Array.from({ length: 8 }, (_, i) => job(`wide-${i}`, 10, { seq: i, cpus: 2 })),
          job("high", 10, { seq: 9 }),
        ],
        hosts: [host("h1", 2, 0), host("h2", 2, 0)],
        running: () =>
          ["h1", "h2"].flatMap((name) => [
            running(`${name}-x`, name, progress(0.5, 1000)),
            running(`${name}-y`, name, progress(0.4, 1000)),
          ]),
      },
      [],
    ],
    [
      "seven such jobs: the eighth is looked at",
      {
        jobs: [
          ...Array.from({ length: 7 }, (_, i) => job(`wide-${i}`, 10, { seq: i, cpus: 2 })),
          job("high", 10, { seq: 9 }),
        ],
        hosts: [host("h1", 2, 0), host("h2", 2, 0)],
        running: () =>
          ["h1", "h2"].flatMap((name) => [
            running(`${name}-x`, name, progress(0.5, 1000)),
            running(`${name}-y`, name, progress(0.4, 1000)),
          ]),
      },
      ["h1-y for high/0"],
    ],
    [
      "a gang's preemption stops the task and keeps no one host's room",
      {
        jobs: [job("gang", 10, { gang: { nodes: 2, nodesPerHost: 1, restartPool: null } })],
        hosts: fullHosts,
        running: () => lowTasks,
      },
      ["stop low-b"],
    ],
    [
      "a gang of one rank is one task: its room is kept",
      {
        jobs: [job("gang", 10, { gang: { nodes: 1, nodesPerHost: 1, restartPool: null } })],
        hosts: fullHosts,
        running: () => lowTasks,
      },
      ["low-b for gang/0"],
    ],
    [
      "no running task at all: nothing to preempt",
      { jobs: [job("high", 10)], hosts: fullHosts, running: () => [] },
      [],
    ],
    [
      "the walk stops at the first job that outranks no running task: not even a wait for one about to end",
      {
        jobs: [job("peer", 0)],
        hosts: [host("h1", 1, 0)],
        running: () => [running("low", "h1", progress(0.99, 1000))],
      },
      [],
    ],
    [
      "the lowest running task is the lowest wherever it is listed: a job outranking only it still looks",
      {
        jobs: [job("high", 3)],
        hosts: fullHosts,
        running: () => [
          running("low", "h1", progress(0.5, 1000)),
          running("mid", "h2", progress(0.5, 1000), { priority: 5 }),
        ],
      },
      ["low for high/0"],
    ],
    [
      "a job whose unplaced tasks all have room kept still waits, like any, for a task about to end",
      {
        jobs: [job("high", 10)],
        hosts: [host("h1", 1, 0)],
        running: () => [running("low", "h1", progress(0.99, 1000))],
        reserved: [keptFor(0)],
      },
      ["recheck in 1000 ms"],
    ],
    [
      "an array's tasks placed in this pass are its own, not those of a job whose id begins alike",
      {
        jobs: [
          job("high", 10, {
            ...ready(1, 0),
            parallel: 3,
            liveTasks: 1,
            requirements: compileExpression('host.name != "free-2"'),
          }),
          job("h-other", 0, { requirements: compileExpression('host.name == "free-2"') }),
        ],
        hosts: [...fullHosts, host("free-1", 1, 1), host("free-2", 1, 1)],
        running: () => lowTasks,
      },
      ["low-b for high/0"],
    ],
    [
      "waiting for a task about to end: a look again in a second",
      {
        jobs: [job("high", 10)],
        hosts: [host("h1", 1, 0)],
        running: () => [running("low", "h1", progress(0.99, 1000))],
      },
      ["recheck in 1000 ms"],
    ],
  ])("%s", (_, state, expected) => {
    expect(preemptions(state)).toStrictEqual(expected);
  });
});

describe("what the preemption stage tells of its reasons", () => {
  it("notes why a job preempts nothing, and nothing for a job that preempts", () => {
    const notes: string[] = [];
    const trace = { noPreemption: (job: JobView, why: string) => notes.push(`${job.id}: ${why}`) };
    const hosts = [host("h1", 1, 0)];
    const tasks = [running("low", "h1", progress(0.5, 1000))];
    schedule({ now: NOW, jobs: [job("high", 10)], hosts, running: () => tasks }, trace);
    expect(notes).toStrictEqual([]);
    const stopped = [running("low", "h1", progress(0.5, 1000), { startedByPreemption: true })];
    schedule({ now: NOW, jobs: [job("high", 10)], hosts, running: () => stopped }, trace);
    expect(notes).toStrictEqual([
      "high: no task it may preempt (the same user's of a lower priority, or of a tier its QoS tier preempts) would make room",
    ]);
  });

  it("a preemption within one tier names no tier in its note", () => {
    const hosts = [host("h1", 1, 0)];
    const tasks = [running("low", "h1", progress(0.5, 1000))];
    const plan = schedule({ now: NOW, jobs: [job("high", 10)], hosts, running: () => tasks });
    expect(plan.preempt[0].stop.note?.data).not.toHaveProperty("forQos");
  });
});

describe("the rescheduling stage of a pass: what it weighs for each task", () => {
  /** The pass's estimates for each task it weighs, as "task: host gain, ...". */
  function weighed(hosts: HostView[], tasks: RunningTaskView[], policy: Partial<MetaschedulingPolicy> = {}) {
    const said: string[] = [];
    schedule(
      { now: NOW, jobs: [], hosts, running: () => tasks, policy },
      {
        rescheduling: (task, estimates) =>
          said.push(
            `${task.job.id}: ${estimates.map((each) => `${each.host} ${each.gain.toFixed(2)}`).join(", ")}`,
          ),
      },
    );
    return said;
  }

  it.each<[string, HostView[], RunningTaskView[], Partial<MetaschedulingPolicy>, string[]]>([
    [
      "no host with room fast enough to pay: weighed with no estimate",
      [host("slow", 1, 0, 5), host("mid", 1, 1, 6)],
      [running("a", "slow", progress(0.1, 100))],
      {},
      ["a: "],
    ],
    [
      "only the hosts fast enough to pay are estimated",
      [host("slow", 1, 0, 5), host("fast", 1, 1, 50), host("mid", 1, 1, 6)],
      [running("a", "slow", progress(0.1, 100))],
      {},
      ["a: fast 0.90"],
    ],
    [
      "a host exactly as fast as a gain of the threshold needs does not pay",
      [host("slow", 1, 0, 5), host("fast", 1, 1, 50), host("edge", 1, 1, 10)],
      [running("a", "slow", progress(0.1, 100))],
      { rescheduleGain: 0.5 },
      ["a: fast 0.90"],
    ],
    [
      "a host the task's rank puts below its own gets no estimate",
      [host("slow", 1, 0, 5, { labels: { tier: "gold" } }), host("fast", 1, 1, 50)],
      [running("a", "slow", progress(0.1, 100), { rank: 'host.labels.tier == "gold" ? 1.0 : 0.0' })],
      {},
      ["a: "],
    ],
  ])("%s", (_, hosts, tasks, policy, expected) => {
    expect(weighed(hosts, tasks, policy)).toStrictEqual(expected);
  });

  it("no room left on any host, replicas having taken the idle slot: no task weighed, as in a pass with none", () => {
    const replicated: JobView = { ...job("r", 0), replicas: 2, mayReplicate: (_task, live) => live < 2 };
    const said: string[] = [];
    schedule(
      {
        now: NOW,
        jobs: [],
        hosts: [host("slow", 1, 0, 5), host("fast", 1, 1, 50)],
        replicable: [{ job: replicated, taskIndex: 0, hosts: ["slow"] }],
        running: () => [running("a", "slow", progress(0.1, 100))],
      },
      { rescheduling: (task) => said.push(task.job.id) },
    );
    expect(said).toStrictEqual([]);
  });
});

describe("the rescheduling stage of a pass: which tasks move where", () => {
  /** A checkpoint that takes `seconds` to move (twice its size at the default rate). */
  const movingIn = (seconds: number) => (seconds * DEFAULT_POLICY.transferBytesPerSecond) / 2;
  function moves(hosts: HostView[], tasks: RunningTaskView[]): string[] {
    return schedule({ now: NOW, jobs: [], hosts, running: () => tasks }).stop.map(
      (each) => `${each.jobId}->${each.migrateTo?.to}: ${renderStopReason(each.intent.reason)}`,
    );
  }

  it.each<[string, HostView[], RunningTaskView[], string[]]>([
    [
      "the fastest host with room is the one looked at first, wherever it is listed",
      [host("slow", 1, 0, 5), host("mid", 1, 1, 6), host("fast", 1, 1, 50)],
      [running("a", "slow", progress(0.1, 100))],
      ["a->fast: rescheduled to fast: estimated gain 0.90"],
    ],
    [
      "a task on a host no longer listed stays",
      [host("fast", 1, 1, 50)],
      [running("a", "vanished", progress(0.1, 100))],
      [],
    ],
    [
      "the largest gain first: the one fast slot goes to the task on the slowest host",
      [host("slowish", 1, 0, 10), host("slowest", 1, 0, 5), host("fast", 1, 1, 50)],
      [running("b", "slowish", progress(0.1, 100)), running("a", "slowest", progress(0.1, 100))],
      ["a->fast: rescheduled to fast: estimated gain 0.90"],
    ],
    [
      "a task whose best host filled up takes the next only if its gain there still pays",
      [host("slow", 2, 0, 5), host("fast", 1, 1, 50), host("mid", 1, 1, 10)],
      [
        running("a", "slow", progress(0.1, 100), { checkpointBytes: movingIn(300) }),
        running("b", "slow", progress(0.1, 100), { checkpointBytes: movingIn(300) }),
      ],
      ["a->fast: rescheduled to fast: estimated gain 0.57"],
    ],
    [
      "a task whose best host filled up takes the next one where the gain pays",
      [host("slow", 2, 0, 5), host("fast", 1, 1, 50), host("mid", 1, 1, 25)],
      [
        running("a", "slow", progress(0.1, 100), { checkpointBytes: movingIn(300) }),
        running("b", "slow", progress(0.1, 100), { checkpointBytes: movingIn(300) }),
      ],
      [
        "a->fast: rescheduled to fast: estimated gain 0.57",
        "b->mid: rescheduled to mid: estimated gain 0.47",
      ],
    ],
    [
      "only to a host the task's requirements allow",
      [host("slow", 1, 0, 5), host("fast", 1, 1, 50)],
      [
        {
          ...running("a", "slow", progress(0.1, 100)),
          job: job("a", 0, { requirements: compileExpression('host.name != "fast"') }),
        },
      ],
      [],
    ],
    [
      "only to a host with room for the task's cpus",
      [host("slow", 2, 0, 5), host("fast", 2, 1, 50)],
      [{ ...running("a", "slow", progress(0.1, 100)), job: job("a", 0, { cpus: 2 }) }],
      [],
    ],
  ])("%s", (_, hosts, tasks, expected) => {
    expect(moves(hosts, tasks)).toStrictEqual(expected);
  });

  /** A checkpoint that costs 25 s to move: half of the 100 s left, done 5 times as fast, is a gain of exactly 0.5. */
  const atThreshold = (id: string) =>
    running(id, "slow", progress(0.5, 100), { checkpointBytes: movingIn(25) });
  it.each<[string, HostView[], RunningTaskView[], string[]]>([
    [
      "a gain of exactly the threshold does not move",
      [host("slow", 1, 0, 5), host("edge", 1, 1, 20)],
      [atThreshold("a")],
      [],
    ],
    [
      "nor after the best host filled up",
      [host("slow", 2, 0, 5), host("fast", 1, 1, 50), host("edge", 1, 1, 20)],
      [atThreshold("a"), atThreshold("b")],
      ["a->fast: rescheduled to fast: estimated gain 0.65"],
    ],
  ])("with a threshold of 0.5: %s", (_, hosts, tasks, expected) => {
    const stops = schedule({
      now: NOW,
      jobs: [],
      hosts,
      running: () => tasks,
      policy: { rescheduleGain: 0.5 },
    }).stop;
    expect(
      stops.map((each) => `${each.jobId}->${each.migrateTo?.to}: ${renderStopReason(each.intent.reason)}`),
    ).toStrictEqual(expected);
  });

  it.each<[string, boolean, string[]]>([
    ["a policy that reschedules moves the task", true, ["a->fast"]],
    ["a policy that does not reschedule moves none", false, []],
  ])("%s", (_, reschedule, expected) => {
    const stops = schedule({
      now: NOW,
      jobs: [],
      hosts: [host("slow", 1, 0, 5), host("fast", 1, 1, 50)],
      running: () => [running("a", "slow", progress(0.1, 100))],
      policy: { reschedule },
    }).stop;
    expect(stops.map((each) => `${each.jobId}->${each.migrateTo?.to}`)).toStrictEqual(expected);
  });

  it("idle slots that replicas took leave no room for a move", () => {
    const replicated: JobView = { ...job("r", 0), replicas: 2, mayReplicate: (_task, live) => live < 2 };
    const plan = schedule({
      now: NOW,
      jobs: [],
      hosts: [host("slow", 1, 0, 5), host("fast", 1, 1, 50)],
      replicable: [{ job: replicated, taskIndex: 0, hosts: ["slow"] }],
      running: () => [running("a", "slow", progress(0.1, 100))],
    });
    expect(plan.place).toStrictEqual([{ kind: "replica", jobId: "r", taskIndex: 0, host: "fast" }]);
    expect(plan.stop).toStrictEqual([]);
  });
});

describe("observedTransferRate", () => {
  it.each<[string, number | null, number, number, number | null]>([
    ["the first upload sets it", null, 10_000_000, 1000, 10_000_000],
    ["the next moves it 30 % of the way", 10_000_000, 20_000_000, 1000, 13_000_000],
    ["a small object is not counted", 10_000_000, 1000, 1, 10_000_000],
    ["an upload of exactly the least size counted", null, 1_048_576, 1000, 1_048_576],
    ["a small object before any: still none", null, 1000, 1, null],
    ["no time measured: not counted", null, 10_000_000, 0, null],
  ])("%s", (_, previous, bytes, ms, expected) => {
    const rate = observedTransferRate(previous, bytes, ms);
    if (expected === null) expect(rate).toBeNull();
    else expect(rate).toBeCloseTo(expected, 3);
  });
});
