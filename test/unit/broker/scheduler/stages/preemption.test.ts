// The preemption stage of a pass (preempt), after its placements: which blocked jobs it looks at,
// in queue order, what it decides for the first that may stop a task (one stop a pass), and what
// it tells of the others. The decision for one job (decidePreemption, notPreemptible) has its
// tables in test/unit/broker/scheduler/metascheduling.test.ts; their edges, and makesRoom, are here.

import { describe, expect, it } from "vitest";
import { taskKey } from "../../../../../src/broker/scheduler/plan.ts";
import { DEFAULT_POLICY } from "../../../../../src/broker/scheduler/policy.ts";
import { feasibleHosts } from "../../../../../src/broker/scheduler/stages/feasibility.ts";
import { type Capacity, capacityOf } from "../../../../../src/broker/scheduler/stages/fit.ts";
import {
  decidePreemption,
  makesRoom,
  notPreemptible,
  PREEMPTION_JOBS_PER_PASS,
  preempt,
} from "../../../../../src/broker/scheduler/stages/preemption.ts";
import type {
  HostView,
  JobView,
  ReservedRoom,
  RunningTaskView,
  SchedulerState,
} from "../../../../../src/broker/scheduler/view.ts";
import { parseQosFile } from "../../../../../src/common/model/qos-file.ts";
import { renderStopReason } from "../../../../../src/common/model/stop-reasons.ts";
import {
  hostView,
  jobView,
  NOW,
  progressOf,
  readyTasks,
  runningView,
} from "../../../../helpers/scheduler-views.ts";

/** Two full hosts of one slot, each running a preemptible task of priority 0: `low-b` has more work left. */
const FULL = [hostView("h1", { slots: 1, slotsFree: 0 }), hostView("h2", { slots: 1, slotsFree: 0 })];
const LOW = [
  runningView(jobView("low-a"), "h1", { progress: progressOf(0.5, 1000) }),
  runningView(jobView("low-b"), "h2", { progress: progressOf(0.3, 1000) }),
];
/** Two full hosts of two slots, each running two tasks of priority 0: one stop makes room for one cpu, not two. */
const FULL_TWO = [hostView("h1", { slots: 2, slotsFree: 0 }), hostView("h2", { slots: 2, slotsFree: 0 })];
const LOW_TWO = ["h1", "h2"].flatMap((host, i) => [
  runningView(jobView(`${host}-x`), host, { progress: progressOf(0.5, 1000) }),
  runningView(jobView(`${host}-y`), host, { progress: progressOf(0.4 - 0.1 * i, 1000) }),
]);
const high = (id = "high", fields: Parameters<typeof jobView>[1] = {}) =>
  jobView(id, { priority: 10, ...fields });

interface Case {
  jobs: JobView[];
  hosts?: HostView[];
  running?: RunningTaskView[];
  /** Tasks the pass placed (job/task). */
  placed?: string[];
  reserved?: ReservedRoom[];
  /** Jobs a running limit holds. */
  held?: string[];
  qos?: string;
}

/** The stage's answer in short: `low-b@h2 for high/0 (reason)`, `stop low-b`, `recheck in N ms`, and what it told. */
function preempted({
  jobs,
  hosts = FULL,
  running = LOW,
  placed = [],
  reserved,
  held = [],
  qos,
}: Case): string[] {
  const state: SchedulerState = {
    now: NOW,
    jobs,
    hosts,
    ...(reserved ? { reserved } : {}),
    ...(qos ? { qos: parseQosFile(qos) } : {}),
  };
  const capacity = new Map(hosts.map((host) => [host.name, capacityOf(host)]));
  const told: string[] = [];
  const decided = preempt(
    {
      state,
      feasibleFor: (job) => feasibleHosts(job, hosts, capacity),
      capacity,
      policy: DEFAULT_POLICY,
      trace: { noPreemption: (job, why) => told.push(`${job.id}: ${why}`) },
    },
    () => running,
    new Set(placed.map((each) => taskKey(each.split("/")[0], Number(each.split("/")[1])))),
    (job) => (held.includes(job.id) ? "held" : null),
  );
  return [
    ...decided.preempt.map(
      ({ stop, place }) =>
        `${stop.jobId}@${place.host} for ${place.jobId}/${place.taskIndex} (${renderStopReason(stop.intent.reason)})`,
    ),
    ...decided.stop.map((stop) => `stop ${stop.jobId} (${renderStopReason(stop.intent.reason)})`),
    ...(decided.recheckAt === undefined ? [] : [`recheck in ${decided.recheckAt - NOW} ms`]),
    ...told,
  ];
}

const NONE_MAKES_ROOM =
  "no task it may preempt (the same user's of a lower priority, or of a tier its QoS tier preempts) would make room";

describe("preempt", () => {
  it.each<[string, Case, string[]]>([
    [
      "a blocked job stops the task with the most work left, and keeps its room for its first task",
      { jobs: [high()] },
      ["low-b@h2 for high/0 (preempted for job high (priority 10))"],
    ],
    ["nothing runs: nothing to stop", { jobs: [high()], running: [] }, []],
    ["a job ranked at or below every running task looks no further", { jobs: [jobView("same"), high()] }, []],
    [
      "only the first job that may stop a task stops one",
      { jobs: [high("first", { seq: 1 }), high("second", { seq: 2 })] },
      ["low-b@h2 for first/0 (preempted for job first (priority 10))"],
    ],
    [
      "a job a running limit holds is passed over",
      { jobs: [high("held", { seq: 1 }), high("next", { seq: 2 })], held: ["held"] },
      ["low-b@h2 for next/0 (preempted for job next (priority 10))"],
    ],
    [
      "a job whose ready tasks the pass placed is passed over",
      { jobs: [high("placed", { seq: 1 }), high("next", { seq: 2 })], placed: ["placed/0"] },
      ["low-b@h2 for next/0 (preempted for job next (priority 10))"],
    ],
    [
      "a task with room kept already is not named again: the next one is",
      {
        jobs: [high("high", readyTasks(0, 1))],
        reserved: [{ job: high(), taskIndex: 0, host: "h1", held: { slots: 0, memoryMb: 0 } }],
      },
      ["low-b@h2 for high/1 (preempted for job high (priority 10))"],
    ],
    [
      "an array at its throttle, with what the pass placed, is passed over",
      { jobs: [high("array", { ...readyTasks(0, 1), parallel: 2, liveTasks: 1 })], placed: ["array/0"] },
      [],
    ],
    [
      "a task that would make room ends soon: the job waits for it, and the pass looks again",
      {
        jobs: [high()],
        running: [runningView(jobView("ending"), "h1", { progress: progressOf(0.9, 1000) })],
      },
      ["recheck in 1000 ms", "high: a running task that would make room for it ends soon: it waits for that"],
    ],
    [
      "a task being stopped makes room soon too",
      { jobs: [high()], running: [runningView(jobView("stopping"), "h1", { stopping: true })] },
      ["recheck in 1000 ms", "high: a running task that would make room for it ends soon: it waits for that"],
    ],
    [
      "no preemptible task makes room: it says so, and the next job looks",
      {
        jobs: [high("big", { seq: 1, cpus: 2 }), high("small", { seq: 2 })],
        hosts: FULL_TWO,
        running: LOW_TWO,
      },
      ["h2-y@h2 for small/0 (preempted for job small (priority 10))", `big: ${NONE_MAKES_ROOM}`],
    ],
    [
      "a task without a checkpoint is no candidate",
      { jobs: [high()], running: [runningView(jobView("low"), "h1", { checkpointBytes: null })] },
      [`high: ${NONE_MAKES_ROOM}`],
    ],
    [
      "a gang stops the task and keeps no one host's room",
      { jobs: [high("gang", { gang: { nodes: 2, nodesPerHost: 1, restartPool: null } })] },
      ["stop low-b (preempted for job gang (priority 10))"],
    ],
    [
      "another user's task only by the tiers: the reason names the tier",
      {
        jobs: [high("urgent", { owner: "bob", qos: "high", qosPriority: 10, priority: 0 })],
        running: LOW.map((task) => ({ ...task, job: { ...task.job, owner: "alice" } })),
        qos: "tiers:\n  normal: {}\n  high:\n    priority: 10\n    preempt: [normal]\n",
      },
      ["low-b@h2 for urgent/0 (preempted for job urgent (QoS high, priority 0))"],
    ],
    [
      "another user's task of a tier it does not preempt: none",
      {
        jobs: [high("urgent", { owner: "bob" })],
        running: LOW.map((task) => ({ ...task, job: { ...task.job, owner: "alice" } })),
      },
      [`urgent: ${NONE_MAKES_ROOM}`],
    ],
    [
      `${PREEMPTION_JOBS_PER_PASS} blocked jobs looked at, none able: the next is not looked at`,
      {
        jobs: [
          ...Array.from({ length: PREEMPTION_JOBS_PER_PASS }, (_, i) =>
            high(`big-${i}`, { seq: i, cpus: 2 }),
          ),
          high("small", { seq: 99 }),
        ],
        hosts: FULL_TWO,
        running: LOW_TWO,
      },
      Array.from({ length: PREEMPTION_JOBS_PER_PASS }, (_, i) => `big-${i}: ${NONE_MAKES_ROOM}`),
    ],
    [
      "a job that may run on no host is not one of those looked at",
      {
        jobs: [
          ...Array.from({ length: PREEMPTION_JOBS_PER_PASS }, (_, i) =>
            high(`nowhere-${i}`, { seq: i, requirements: 'host.name == "none"' }),
          ),
          high("small", { seq: 99 }),
        ],
      },
      ["low-b@h2 for small/0 (preempted for job small (priority 10))"],
    ],
  ])("%s", (_, input, expected) => {
    expect(preempted(input)).toStrictEqual(expected);
  });

  it("tells the stop's numbers in its event and names the attempt it stops", () => {
    const capacity = new Map(FULL.map((host) => [host.name, capacityOf(host)]));
    const {
      preempt: [only],
    } = preempt(
      {
        state: { now: NOW, jobs: [high()], hosts: FULL },
        feasibleFor: (job) => feasibleHosts(job, FULL, capacity),
        capacity,
        policy: DEFAULT_POLICY,
        trace: {},
      },
      () => LOW,
      new Set(),
    );
    expect(only.stop).toStrictEqual({
      jobId: "low-b",
      taskIndex: 0,
      attempt: 1,
      intent: {
        outcome: "preempted",
        reason: { kind: "preempted-for", job: "high", priority: 10, qos: null },
      },
      note: {
        kind: "preempt",
        data: {
          task: 0,
          attempt: 1,
          host: "h2",
          for: "high",
          forPriority: 10,
          remainingSeconds: expect.closeTo(2333.33, 1),
        },
      },
    });
    expect(renderStopReason(only.stop.intent.reason)).toBe("preempted for job high (priority 10)");
    expect(only.place).toStrictEqual({ kind: "task", jobId: "high", taskIndex: 0, host: "h2" });
  });
});

describe("makesRoom: the stopped task's cpus, memory, GPUs and units added to what its host has free", () => {
  it.each<
    [string, Parameters<typeof jobView>[1], Parameters<typeof jobView>[1], Capacity | undefined, boolean]
  >([
    ["a host with no room known: none", {}, {}, undefined, false],
    ["its memory", { memoryMb: 1024 }, { memoryMb: 1024 }, { slotsFree: 0, memoryFreeMb: 0 }, true],
    [
      "more memory than it frees",
      { memoryMb: 1025 },
      { memoryMb: 1024 },
      { slotsFree: 0, memoryFreeMb: 0 },
      false,
    ],
    [
      "its GPUs, with one free",
      { gpus: 2 },
      { gpus: 1 },
      { slotsFree: 0, memoryFreeMb: 0, gpusFree: 1 },
      true,
    ],
    [
      "more GPUs than it frees",
      { gpus: 3 },
      { gpus: 1 },
      { slotsFree: 0, memoryFreeMb: 0, gpusFree: 1 },
      false,
    ],
    [
      "its units, with one free",
      { custom: { licence: 2 } },
      { custom: { licence: 1 } },
      { slotsFree: 0, memoryFreeMb: 0, customFree: { licence: 1 } },
      true,
    ],
    [
      "its units, with none free",
      { custom: { licence: 1 } },
      { custom: { licence: 1 } },
      { slotsFree: 0, memoryFreeMb: 0, customFree: { licence: 0 } },
      true,
    ],
    [
      "more units than it frees",
      { custom: { licence: 3 } },
      { custom: { licence: 1 } },
      { slotsFree: 0, memoryFreeMb: 0, customFree: { licence: 1 } },
      false,
    ],
  ])("%s", (_, need, holds, free, fits) => {
    const task = runningView(jobView("low", holds), "h1");
    expect(makesRoom(jobView("high", need), task, free)).toBe(fits);
  });
});

describe("the edges of a preemption decision", () => {
  it("a task at exactly the least progress may be preempted", () => {
    const task = runningView(jobView("low"), "h1", { progress: progressOf(0.2, 100) });
    expect(notPreemptible(task, { preemptMinProgress: 0.2 })).toBeNull();
  });

  it.each<[string, Parameters<typeof progressOf>, string]>([
    // 0.5 done in 256 s: 256 s left, exactly the wait.
    ["a task ending at exactly the wait: the job waits for it", [0.5, 256], "wait"],
    ["a task ending just after the wait: it is preempted", [0.5, 257], "preempt"],
    // Half done at its start: progress made, but no rate to tell the time left from.
    ["a task whose time left cannot be told: neither waited for nor preempted", [0.5, 0], "none"],
  ])("%s", (_, progress, kind) => {
    const host = hostView("h1", { slots: 1, slotsFree: 0 });
    const decision = decidePreemption(
      jobView("high", { priority: 10 }),
      [host],
      new Map([["h1", capacityOf(host)]]),
      [runningView(jobView("low"), "h1", { progress: progressOf(...progress) })],
      NOW,
      { preemptWaitSeconds: 256, preemptMinProgress: 0.2 },
    );
    expect(decision.kind).toBe(kind);
  });
});
