// Replicas (OurGrid): the scheduler stage that puts idle slots to work on extra attempts of running
// tasks, and the pure rules of what a replica's end does to its task.

import { describe, expect, it } from "vitest";
import { compareQueueOrder } from "../../../../../src/broker/scheduler/queue-order.ts";
import { schedule } from "../../../../../src/broker/scheduler/schedule.ts";
import type { HostView, JobView, RunningTask } from "../../../../../src/broker/scheduler/view.ts";
import { compileExpression } from "../../../../../src/common/model/cel.ts";
import { renderTaskNext } from "../../../../../src/common/model/events.ts";
import { mayAddReplica, taskAfterReplicaEnd } from "../../../../../src/common/model/replicas.ts";
import { POISON_LOSS_LIMIT, SYSTEM_FAILURE_LIMIT } from "../../../../../src/common/model/task-outcome.ts";

const NOW = 1_000_000;

interface JobRow {
  id: string;
  replicas?: number;
  cpus?: number;
  priority?: number;
  /** The QoS tier's priority. */
  qosPriority?: number;
  seq?: number;
  requirements?: string;
  rank?: string;
  /** Ready (pending) task indexes. */
  ready?: number[];
  /** Tasks that may not have another replica, whatever their count. */
  noBudget?: number[];
  /** A view without its own rule of when a task may have another replica (then: while fewer than k live). */
  noReplicaRule?: boolean;
  /** Tasks that move with a rule of their own (migrations): the index and the hosts it may go to. */
  migrating?: { index: number; to: string[] }[];
}

function job(row: JobRow): JobView {
  const replicas = row.replicas ?? 2;
  return {
    id: row.id,
    priority: row.priority ?? 0,
    qosPriority: row.qosPriority,
    createdAt: 0,
    seq: row.seq ?? 0,
    cpus: row.cpus ?? 1,
    memoryMb: 0,
    requirements: row.requirements ? compileExpression(row.requirements) : null,
    rank: row.rank ? compileExpression(row.rank) : null,
    readyTasks: () => row.ready ?? [],
    ...(row.migrating
      ? {
          constrainedTasks: () =>
            (row.migrating ?? []).map(({ index, to }) => ({
              index,
              allows: (name: string) => to.includes(name),
            })),
        }
      : {}),
    replicas,
    ...(row.noReplicaRule
      ? {}
      : {
          mayReplicate: (index: number, live: number) =>
            live < replicas && !(row.noBudget ?? []).includes(index),
        }),
  };
}

interface HostRow {
  name: string;
  slots?: number;
  slotsFree?: number;
  speed?: number;
  connected?: boolean;
}

function host(row: HostRow): HostView {
  const slots = row.slots ?? 1;
  const slotsFree = row.slotsFree ?? slots;
  return {
    name: row.name,
    state: "ready",
    connected: row.connected ?? true,
    slots,
    slotsFree,
    memoryFreeMb: 8192,
    facts: {
      name: row.name,
      pool: "local",
      os: "linux",
      arch: "x86_64",
      cpus: slots,
      memoryMb: 8192,
      memFreeMb: 8192,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: 10_000,
      speed: row.speed ?? 1,
      labels: {},
      slotsFree,
    },
  };
}

interface Table {
  /** Jobs with ready tasks (the queue). */
  queued?: JobRow[];
  /** Running tasks: the job, the task and the hosts of its live attempts. */
  running?: { job: JobRow; task?: number; hosts: string[] }[];
  hosts: HostRow[];
}

/** One pass; placements as "job/task@host", replicas marked with a "+". */
function pass(table: Table): string[] {
  const views = new Map<string, JobView>();
  const viewOf = (row: JobRow) => {
    let view = views.get(row.id);
    if (!view) {
      view = job(row);
      views.set(row.id, view);
    }
    return view;
  };
  const jobs = (table.queued ?? []).map(viewOf).sort(compareQueueOrder);
  const running: RunningTask[] = (table.running ?? []).map((entry) => ({
    job: viewOf(entry.job),
    taskIndex: entry.task ?? 0,
    hosts: entry.hosts,
  }));
  return schedule({ now: NOW, jobs, hosts: table.hosts.map(host), replicable: running }).place.map(
    (p) => `${p.kind === "replica" ? "+" : ""}${p.jobId}/${p.taskIndex}@${p.host}`,
  );
}

const busy = (name: string, speed = 1): HostRow => ({ name, slotsFree: 0, speed });

describe("replica stage", () => {
  it.each<[string, Table, string[]]>([
    [
      "an idle slot and nothing pending: a replica of the running task",
      { running: [{ job: { id: "r" }, hosts: ["slow"] }], hosts: [busy("slow", 0.1), { name: "fast" }] },
      ["+r/0@fast"],
    ],
    [
      "a job with replicas: 1 gets none",
      {
        running: [{ job: { id: "r", replicas: 1 }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "fast" }],
      },
      [],
    ],
    [
      "pending work takes the idle slot first: no replica",
      {
        queued: [{ id: "p", replicas: 1, ready: [0] }],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "fast" }],
      },
      ["p/0@fast"],
    ],
    [
      "a pending task that could use the idle host but found no room there: no replica takes it",
      {
        queued: [{ id: "p", replicas: 1, cpus: 2, ready: [0] }],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "fast", slots: 2, slotsFree: 1 }],
      },
      [],
    ],
    [
      "a pending task that may not run on the idle host does not keep it from a replica",
      {
        queued: [{ id: "p", replicas: 1, requirements: 'host.name == "elsewhere"', ready: [0] }],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "fast" }],
      },
      ["+r/0@fast"],
    ],
    [
      "a pending task left unplaced keeps only the hosts it could use",
      {
        queued: [{ id: "p", replicas: 1, cpus: 2, requirements: 'host.name == "a"', ready: [0] }],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "a", slots: 2, slotsFree: 1, speed: 5 }, { name: "b" }],
      },
      ["+r/0@b"],
    ],
    [
      "k attempts already live: none",
      {
        running: [{ job: { id: "r", replicas: 2 }, hosts: ["slow", "mid"] }],
        hosts: [busy("slow", 0.1), busy("mid"), { name: "fast" }],
      },
      [],
    ],
    [
      "k = 3: up to two replicas of one task, on two different hosts",
      {
        running: [{ job: { id: "r", replicas: 3 }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "a", slots: 2 }, { name: "b", slots: 2 }],
      },
      ["+r/0@a", "+r/0@b"],
    ],
    [
      "never on a host that runs an attempt of the task already, however free",
      { running: [{ job: { id: "r" }, hosts: ["big"] }], hosts: [{ name: "big", slots: 4, slotsFree: 3 }] },
      [],
    ],
    [
      "the slowest host's task first",
      {
        running: [
          { job: { id: "m", seq: 1 }, hosts: ["mid"] },
          { job: { id: "s", seq: 2 }, hosts: ["slow"] },
        ],
        hosts: [busy("mid", 0.5), busy("slow", 0.1), { name: "fast", speed: 2 }],
      },
      ["+s/0@fast"],
    ],
    [
      "a task counts as fast as its fastest attempt",
      {
        running: [
          { job: { id: "a", replicas: 3, seq: 1 }, hosts: ["slow", "quick"] },
          { job: { id: "b", seq: 2 }, hosts: ["mid"] },
        ],
        hosts: [busy("slow", 0.1), busy("quick", 3), busy("mid", 0.5), { name: "fast", speed: 2 }],
      },
      ["+b/0@fast"],
    ],
    [
      "equal speeds: queue order",
      {
        running: [
          { job: { id: "second", seq: 2 }, hosts: ["h2"] },
          { job: { id: "first", seq: 1 }, hosts: ["h1"] },
        ],
        hosts: [busy("h1"), busy("h2"), { name: "idle" }],
      },
      ["+first/0@idle"],
    ],
    [
      "equal speeds: a job's priority does not go first, a higher QoS tier does",
      {
        running: [
          { job: { id: "pushy", seq: 2, priority: 1_000_000 }, hosts: ["h2"] },
          { job: { id: "first", seq: 1 }, hosts: ["h1"] },
          { job: { id: "high", seq: 3, qosPriority: 10 }, hosts: ["h3"] },
        ],
        hosts: [busy("h1"), busy("h2"), busy("h3"), { name: "idle" }],
      },
      ["+high/0@idle"],
    ],
    [
      "equal speeds and tiers: submit order, whatever the priority",
      {
        running: [
          { job: { id: "pushy", seq: 2, priority: 1_000_000 }, hosts: ["h2"] },
          { job: { id: "first", seq: 1 }, hosts: ["h1"] },
        ],
        hosts: [busy("h1"), busy("h2"), { name: "idle" }],
      },
      ["+first/0@idle"],
    ],
    [
      "every slow task gets one replica before any gets a second",
      {
        running: [
          { job: { id: "a", replicas: 3, seq: 1 }, hosts: ["s1"] },
          { job: { id: "b", replicas: 3, seq: 2 }, hosts: ["s2"] },
        ],
        hosts: [busy("s1", 0.1), busy("s2", 0.2), { name: "f1", speed: 2 }, { name: "f2", speed: 2 }],
      },
      ["+a/0@f1", "+b/0@f2"],
    ],
    [
      "the target is the fastest idle host",
      {
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "a", speed: 1 }, { name: "b", speed: 4 }, { name: "c", speed: 2 }],
      },
      ["+r/0@b"],
    ],
    [
      "the job's rank comes before speed",
      {
        running: [{ job: { id: "r", rank: 'host.name == "a" ? 1.0 : 0.0' }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "a", speed: 1 }, { name: "b", speed: 4 }],
      },
      ["+r/0@a"],
    ],
    [
      "requirements hold for replicas too",
      {
        running: [{ job: { id: "r", requirements: 'host.name != "b"' }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "b", speed: 4 }],
      },
      [],
    ],
    [
      "a replica needs the cpus of its job",
      {
        running: [{ job: { id: "r", cpus: 2 }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "b", slots: 2, slotsFree: 1 }],
      },
      [],
    ],
    [
      "a disconnected host gets no replica",
      {
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "b", connected: false }],
      },
      [],
    ],
    [
      "a task with no budget left gets no replica",
      {
        running: [{ job: { id: "r", noBudget: [0] }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "b" }],
      },
      [],
    ],
    [
      "a job of no QoS tier counts as the default tier: a higher tier's task still goes first",
      {
        running: [
          { job: { id: "plain", seq: 1 }, hosts: ["h1"] },
          { job: { id: "high", seq: 2, qosPriority: 10 }, hosts: ["h2"] },
        ],
        hosts: [busy("h1"), busy("h2"), { name: "idle" }],
      },
      ["+high/0@idle"],
    ],
    [
      "equal speeds, one job: its lower task index first",
      {
        running: [
          { job: { id: "r" }, task: 1, hosts: ["h1"] },
          { job: { id: "r" }, task: 0, hosts: ["h2"] },
        ],
        hosts: [busy("h1"), busy("h2"), { name: "idle" }],
      },
      ["+r/0@idle"],
    ],
    [
      "an attempt on a host no longer listed counts as the slowest",
      {
        running: [
          { job: { id: "known", seq: 1 }, hosts: ["slow"] },
          { job: { id: "gone", seq: 2 }, hosts: ["vanished"] },
        ],
        hosts: [busy("slow", 0.1), { name: "fast" }],
      },
      ["+gone/0@fast"],
    ],
    [
      "the job's rank comes before speed, wherever the better-ranked host is listed",
      {
        running: [{ job: { id: "r", rank: 'host.name == "z" ? 1.0 : 0.0' }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "b", speed: 4 }, { name: "z", speed: 1 }],
      },
      ["+r/0@z"],
    ],
    [
      "equal rank and speed: the host with more free slots",
      {
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [
          busy("slow", 0.1),
          { name: "a", slots: 4, slotsFree: 1 },
          { name: "b", slots: 4, slotsFree: 3 },
        ],
      },
      ["+r/0@b"],
    ],
    [
      "equal rank, speed and room: the first host by name",
      {
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "b" }, { name: "a" }],
      },
      ["+r/0@a"],
    ],
    [
      "a view without its own replica rule: up to k attempts at once",
      {
        running: [{ job: { id: "r", replicas: 3, noReplicaRule: true }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "a" }, { name: "b" }, { name: "c" }],
      },
      ["+r/0@a", "+r/0@b"],
    ],
    [
      "a view without its own replica rule: none once k attempts are live",
      {
        running: [{ job: { id: "r", replicas: 2, noReplicaRule: true }, hosts: ["slow", "mid"] }],
        hosts: [busy("slow", 0.1), busy("mid"), { name: "a" }],
      },
      [],
    ],
    [
      "a task running and placed again in this pass counts both attempts: k = 2 are live",
      {
        queued: [{ id: "r", ready: [0] }],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "a" }, { name: "b" }],
      },
      ["r/0@a"],
    ],
    [
      "a task placed in this pass gets no replica on its own host, however free",
      { queued: [{ id: "n", ready: [0] }], hosts: [{ name: "a", slots: 2 }] },
      ["n/0@a"],
    ],
    [
      "a pending task's busy host is not an idle one it keeps: the idle host it could use stays kept",
      {
        queued: [
          { id: "p1", replicas: 1, seq: 1, requirements: 'host.name == "x"', ready: [0] },
          { id: "p2", replicas: 1, seq: 2, cpus: 2, ready: [0] },
        ],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), busy("x"), { name: "fast", slots: 2, slotsFree: 1 }],
      },
      [],
    ],
    [
      "a pending job behind one that keeps no idle host still keeps the one it could use",
      {
        queued: [
          { id: "p1", replicas: 1, seq: 1, requirements: 'host.name == "elsewhere"', ready: [0] },
          { id: "p2", replicas: 1, seq: 2, cpus: 2, ready: [0] },
        ],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "fast", slots: 2, slotsFree: 1 }],
      },
      [],
    ],
    [
      "a migrating task left unplaced keeps the idle host it may go to",
      {
        queued: [{ id: "m", replicas: 1, cpus: 2, migrating: [{ index: 0, to: ["fast"] }] }],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "fast", slots: 2, slotsFree: 1 }],
      },
      [],
    ],
    [
      "a migrating task left unplaced keeps no idle host it may not go to",
      {
        queued: [{ id: "m", replicas: 1, cpus: 2, migrating: [{ index: 0, to: ["other"] }] }],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "fast", slots: 2, slotsFree: 1 }],
      },
      ["+r/0@fast"],
    ],
    [
      "a migrating task placed in this pass keeps no other host",
      {
        queued: [{ id: "m", replicas: 1, migrating: [{ index: 0, to: ["a", "b"] }] }],
        running: [{ job: { id: "r" }, hosts: ["slow"] }],
        hosts: [busy("slow", 0.1), { name: "a" }, { name: "b" }],
      },
      ["m/0@a", "+r/0@b"],
    ],
    [
      "a task placed in this pass gets its replica in the same pass, on another host",
      { queued: [{ id: "n", ready: [0] }], hosts: [{ name: "a" }, { name: "b" }] },
      ["n/0@a", "+n/0@b"],
    ],
    [
      "every task of an array is placed before any replica",
      {
        queued: [{ id: "n", ready: [0, 1, 2] }],
        hosts: [
          { name: "a", slots: 2 },
          { name: "b", slots: 2 },
        ],
      },
      ["n/0@a", "n/1@b", "n/2@a", "+n/0@b"],
    ],
    [
      "tasks left unplaced in this pass: no replica of the placed ones",
      { queued: [{ id: "n", ready: [0, 1, 2] }], hosts: [{ name: "a" }, { name: "b" }] },
      ["n/0@a", "n/1@b"],
    ],
  ])("%s", (_, table, expected) => {
    expect(pass(table)).toStrictEqual(expected);
  });
});

describe("taskAfterReplicaEnd", () => {
  const retry = { maxAttempts: 3, backoffSeconds: 5 };
  const fresh = { failures: 0, losses: 0, systemFailures: 0 };

  it.each<[string, Parameters<typeof taskAfterReplicaEnd>[1], typeof fresh]>([
    [
      "a failure uses the retry budget",
      { outcome: "failed", reason: "exit code 1" },
      { ...fresh, failures: 1 },
    ],
    ["a time-out uses the retry budget", { outcome: "timed_out", reason: null }, { ...fresh, failures: 1 }],
    ["a host loss counts toward poison", { outcome: "lost", reason: "silent" }, { ...fresh, losses: 1 }],
    [
      "a staging failure counts as a system failure",
      { outcome: "lost", reason: "staging", cause: "staging" },
      { ...fresh, systemFailures: 1 },
    ],
    ["a stop counts for nothing: cancelled", { outcome: "cancelled", reason: "x" }, fresh],
    ["a stop counts for nothing: preempted", { outcome: "preempted", reason: "held" }, fresh],
    ["a stop counts for nothing: migrated", { outcome: "migrated", reason: null }, fresh],
  ])("%s", (_, end, counters) => {
    const after = taskAfterReplicaEnd(fresh, end, retry, 1);
    expect({
      failures: after.failures,
      losses: after.losses,
      systemFailures: after.systemFailures,
    }).toStrictEqual(counters);
    expect(renderTaskNext(after.next, end)).toContain("1 other replica still running");
  });

  it("says how much of the budget is used and how many replicas still run", () => {
    const end = { outcome: "failed", reason: null } as const;
    const after = taskAfterReplicaEnd({ ...fresh, failures: 1 }, end, retry, 2);
    expect(renderTaskNext(after.next, end)).toBe(
      "failed (2 of 3 attempts used); 2 other replicas still running",
    );
  });
});

describe("mayAddReplica", () => {
  const retry = { maxAttempts: 2, backoffSeconds: 5 };
  const fresh = { failures: 0, losses: 0, systemFailures: 0 };
  it.each<[string, typeof fresh, number, number, boolean]>([
    ["fewer than k live", fresh, 1, 2, true],
    ["k live", fresh, 2, 2, false],
    ["more than k live", fresh, 3, 2, false],
    ["one failure of two allowed", { ...fresh, failures: 1 }, 1, 3, true],
    ["retry budget used up", { ...fresh, failures: 2 }, 1, 3, false],
    ["lost one time short of poison", { ...fresh, losses: POISON_LOSS_LIMIT - 1 }, 1, 3, true],
    ["lost as often as a poison task", { ...fresh, losses: POISON_LOSS_LIMIT }, 1, 3, false],
    ["system failures used up", { ...fresh, systemFailures: SYSTEM_FAILURE_LIMIT }, 1, 3, false],
  ])("%s", (_, task, live, replicas, expected) => {
    expect(mayAddReplica(task, live, replicas, retry)).toBe(expected);
  });
});
