// Placing a job's tasks in a pass: room a preemption kept going to its task first; the feasible
// hosts ranked once, at the job's first turn (or the job turned away, its batch with it); each
// next task to the best host with room, a task with a rule or a size of its own tried alone, a
// gang's ranks all at once or none (hosts held for it once it has waited long enough); and what one
// task takes of a host.

import { describe, expect, it } from "vitest";
import { batchKey } from "../../../../src/broker/scheduler/batches.ts";
import {
  cursorOf,
  type JobCursor,
  needOf,
  placeInKeptRoom,
  placeNext,
  rankFeasibleHosts,
} from "../../../../src/broker/scheduler/job-placement.ts";
import { Pass } from "../../../../src/broker/scheduler/pass.ts";
import { taskKey } from "../../../../src/broker/scheduler/plan.ts";
import type { JobView } from "../../../../src/broker/scheduler/view.ts";
import { type HostFields, type JobFields, passOver, roomsOf } from "../../../helpers/scheduler-pass.ts";
import { hostView, jobView, NOW, readyTasks } from "../../../helpers/scheduler-views.ts";

/** The job's turns in the pass until it places nothing more: its placements as `task@host` (a gang's hosts joined by `+`). */
function placeAll(pass: Pass, job: JobView, cursor: JobCursor = cursorOf(job)): string[] {
  const before = pass.plan.place.length;
  if (rankFeasibleHosts(pass, cursor))
    for (;;) {
      const count = pass.plan.place.length;
      const placed = placeNext(pass, cursor);
      // True when, and only when, it placed a task (or a gang): the job keeps its turn.
      expect(pass.plan.place.length).toBe(placed ? count + 1 : count);
      if (!placed) break;
    }
  return pass.plan.place
    .slice(before)
    .map((each) => `${each.taskIndex}@${each.kind === "gang" ? each.ranks.join("+") : each.host}`);
}

/** The indexes a cursor's tasks have left, in order. */
function indexesLeft(cursor: JobCursor): number[] {
  const left: number[] = [];
  for (let next = cursor.tasks!.next(); !next.done; next = cursor.tasks!.next()) left.push(next.value.index);
  return left;
}

describe("cursorOf", () => {
  it("keeps the job's batch key and nothing worked out yet", () => {
    const job = jobView("j", { cpus: 2, memoryMb: 100 });
    expect(cursorOf(job)).toStrictEqual({
      job,
      key: batchKey(job),
      scored: null,
      rooms: null,
      shared: null,
      tasks: null,
    });
  });
});

describe("needOf", () => {
  it.each<[string, ((index: number) => number | undefined) | undefined, number]>([
    ["no task's memory of its own: the job's", undefined, 512],
    ["the task's memory unknown: the job's", () => undefined, 512],
    ["the task's memory the job's", () => 512, 512],
    ["the task's own memory, grown", (index) => (index === 3 ? 2048 : undefined), 2048],
  ])("%s", (_, taskMemoryMb, memoryMb) => {
    const job = jobView("j", { cpus: 2, memoryMb: 512, gpus: 1, taskMemoryMb });
    const need = needOf(job, 3);
    expect(need.memoryMb).toBe(memoryMb);
    if (memoryMb === job.memoryMb) expect(need).toBe(job);
    else expect(need).toStrictEqual({ ...job, memoryMb });
    expect(needOf(job, 2)).toBe(job);
  });
});

/**
 * The host's free slots and memory, what is held for the task (slots, MB), the job, the task
 * (grown: 1024 MB for task 3), then whether it is placed, the host's room after and the pass's
 * free slots in all.
 */
type KeptCase = [
  string,
  [number, number],
  [number, number],
  JobFields,
  number,
  boolean,
  [number, number],
  number,
];
const grown: JobFields = { memoryMb: 512, taskMemoryMb: (index) => (index === 3 ? 1024 : undefined) };

describe("placeInKeptRoom", () => {
  it.each<KeptCase>([
    ["the task takes the room kept for it", [0, 0], [1, 512], { memoryMb: 512 }, 0, true, [0, 0], 0],
    ["what else is free on the host stays free", [1, 100], [1, 512], { memoryMb: 512 }, 0, true, [1, 100], 1],
    [
      "room kept beyond the task's need is free for the work behind",
      [1, 0],
      [3, 1000],
      { cpus: 2, memoryMb: 400 },
      0,
      true,
      [2, 600],
      2,
    ],
    [
      "on a host running over its slots, only what is free after counts",
      [-1, 0],
      [3, 0],
      {},
      0,
      true,
      [1, 0],
      1,
    ],
    [
      "room kept that the task no longer fits in is left",
      [0, 100],
      [1, 512],
      { memoryMb: 1024 },
      0,
      false,
      [0, 100],
      0,
    ],
    ["the task's own grown memory, not the job's", [0, 0], [1, 512], grown, 3, false, [0, 0], 0],
    ["another task of that job is not grown", [0, 0], [1, 512], grown, 2, true, [0, 0], 0],
  ])("%s", (_, [slotsFree, memoryFreeMb], [slots, memoryMb], fields, taskIndex, placed, after, free) => {
    const job = jobView("j", { owner: "alice", ...fields });
    const { pass, said } = passOver(
      { h: { slots: 4, slotsFree, memoryFreeMb } },
      { reserved: [{ job, taskIndex, host: "h", held: { slots, memoryMb } }] },
    );
    const room = pass.capacity.get("h");
    placeInKeptRoom(pass);
    expect(pass.capacity.get("h")).toBe(room);
    expect(roomsOf(pass)).toStrictEqual({ h: after });
    expect(pass.slotsFree).toBe(free);
    expect(said).toStrictEqual([]);
    if (placed) {
      expect(pass.plan.place).toStrictEqual([
        { kind: "task", jobId: "j", taskIndex, host: "h", reserved: true },
      ]);
      expect([...pass.placedFirst]).toStrictEqual([taskKey("j", taskIndex)]);
      expect([...pass.placedCpus]).toStrictEqual([["alice", job.cpus]]);
      expect(pass.placedJobs.get("j")).toBe(job);
    } else {
      expect(pass.plan.place).toStrictEqual([]);
      expect(pass.placedFirst.size).toBe(0);
      expect(pass.placedCpus.size).toBe(0);
    }
  });

  it("places each kept room's task, counting cpus by owner, and skips a host that takes no work", () => {
    const alice = jobView("a", { owner: "alice", cpus: 2 });
    const more = jobView("b", { owner: "alice" });
    const nobody = jobView("c");
    const held = { slots: 2, memoryMb: 0 };
    const { pass } = passOver(
      { h1: { slotsFree: 0 }, h2: { slotsFree: 0 }, off: { state: "draining", slotsFree: 0 } },
      {
        reserved: [
          { job: alice, taskIndex: 4, host: "h1", held },
          { job: nobody, taskIndex: 0, host: "off", held },
          { job: more, taskIndex: 1, host: "h2", held },
          { job: nobody, taskIndex: 2, host: "h2", held: { slots: 0, memoryMb: 0 } },
        ],
      },
    );
    placeInKeptRoom(pass);
    expect(pass.plan.place.map((each) => `${each.jobId}/${each.taskIndex}@${each.host}`)).toStrictEqual([
      "a/4@h1",
      "b/1@h2",
      "c/2@h2",
    ]);
    expect([...pass.placedCpus]).toStrictEqual([
      ["alice", 3],
      ["", 1],
    ]);
    expect([...pass.placedFirst]).toStrictEqual([taskKey("a", 4), taskKey("b", 1), taskKey("c", 2)]);
    expect(roomsOf(pass)).toStrictEqual({ h1: [0, 8192], h2: [0, 8192] });
  });
});

describe("rankFeasibleHosts", () => {
  const hosts = {
    a: { facts: { speed: 1 } },
    b: { facts: { speed: 3 } },
    off: { state: "draining" as const },
  };

  it("scores an ordinary job's feasible hosts at its first turn, shared with jobs alike", () => {
    const { pass, said } = passOver(hosts);
    const job = jobView("j", { rank: "host.speed", ...readyTasks(2, 0) });
    const cursor = cursorOf(job);
    expect(rankFeasibleHosts(pass, cursor)).toBe(true);
    expect(cursor.shared).toBe(pass.scoredFor(jobView("alike", { rank: "host.speed" }), cursor.key));
    expect(cursor.scored).toBe(cursor.shared!.scored);
    expect(cursor.rooms).toBe(cursor.shared!.rooms);
    expect(cursor.scored!.map((each) => [each.host.name, each.rank])).toStrictEqual([
      ["a", 1],
      ["b", 3],
    ]);
    expect(indexesLeft(cursor)).toStrictEqual([2, 0]);
    expect(said).toStrictEqual([]);
    expect(pass.exhausted.has(cursor.key)).toBe(false);
  });

  it("tries the tasks with a rule of their own first, each with its rule, then the ready ones, as of the pass's now", () => {
    const { pass } = passOver(hosts, { now: NOW + 7 });
    const asked: number[] = [];
    const allows = (host: string) => host === "b";
    const job = jobView("j", {
      readyTasks: (now) => {
        asked.push(now);
        return [0, 1];
      },
      constrainedTasks: (now) => {
        asked.push(now);
        return [{ index: 5, allows }];
      },
    });
    const cursor = cursorOf(job);
    rankFeasibleHosts(pass, cursor);
    const tasks = [...{ [Symbol.iterator]: () => cursor.tasks! }];
    expect(tasks).toStrictEqual([
      { index: 5, allows, rule: { index: 5, allows } },
      { index: 0, allows: null, rule: null },
      { index: 1, allows: null, rule: null },
    ]);
    expect(asked).toStrictEqual([NOW + 7, NOW + 7]);
  });

  it("turns away a job no host that takes work matches, and its batch with it", () => {
    const { pass, said } = passOver(hosts);
    const job = jobView("j", { requirements: "host.speed > 5" });
    const cursor = cursorOf(job);
    expect(rankFeasibleHosts(pass, cursor)).toBe(false);
    expect(said).toStrictEqual(["j: no host that takes work matches it"]);
    expect(pass.exhausted.has(cursor.key)).toBe(true);
    expect([cursor.scored, cursor.rooms, cursor.shared, cursor.tasks]).toStrictEqual([
      null,
      null,
      null,
      null,
    ]);
  });

  it("turns away a job whose batch found no room earlier in the pass, without scoring", () => {
    const { pass, said } = passOver(hosts);
    const job = jobView("j");
    const cursor = cursorOf(job);
    pass.exhausted.add(cursor.key);
    expect(rankFeasibleHosts(pass, cursor)).toBe(false);
    expect(said).toStrictEqual(["j: work alike ahead of it found no room in this pass"]);
    expect([cursor.scored, cursor.tasks]).toStrictEqual([null, null]);
    // A job of another batch is not turned away.
    expect(rankFeasibleHosts(pass, cursorOf(jobView("k", { cpus: 2 })))).toBe(true);
  });

  it("keeps a ranked job's hosts and its place in its tasks at its next turn", () => {
    const { pass } = passOver(hosts);
    const job = jobView("j", readyTasks(0, 1, 2));
    const cursor = cursorOf(job);
    rankFeasibleHosts(pass, cursor);
    const scored = cursor.scored;
    cursor.tasks!.next();
    expect(rankFeasibleHosts(pass, cursor)).toBe(true);
    expect(cursor.scored).toBe(scored);
    expect(indexesLeft(cursor)).toStrictEqual([1, 2]);
  });

  it.each<[string, boolean]>([
    ["scores a gang whatever it finds", false],
    ["scores a gang even when its batch found no room", true],
  ])("%s", (_, exhausted) => {
    const { pass, said } = passOver(hosts);
    const job = jobView("g", { gang: { nodes: 2, nodesPerHost: 1, restartPool: null }, cpus: 16 });
    const cursor = cursorOf(job);
    if (exhausted) pass.exhausted.add(cursor.key);
    expect(rankFeasibleHosts(pass, cursor)).toBe(true);
    expect(cursor.scored).toStrictEqual([]);
    expect(cursor.rooms).toStrictEqual([]);
    expect(cursor.shared).toBeNull();
    expect(indexesLeft(cursor)).toStrictEqual([0]);
    expect(said).toStrictEqual([]);
  });

  it("keeps a ranked gang's place in its tasks", () => {
    const { pass } = passOver(hosts);
    const job = jobView("g", { gang: { nodes: 2, nodesPerHost: 1, restartPool: null }, ...readyTasks(0, 1) });
    const cursor = cursorOf(job);
    rankFeasibleHosts(pass, cursor);
    const scored = cursor.scored;
    cursor.tasks!.next();
    rankFeasibleHosts(pass, cursor);
    expect(cursor.scored).toBe(scored);
    expect(indexesLeft(cursor)).toStrictEqual([1]);
  });

  it("a gang of one rank is an ordinary job: turned away with its batch", () => {
    const { pass, said } = passOver(hosts);
    const job = jobView("g", { gang: { nodes: 1, nodesPerHost: 1, restartPool: null } });
    const cursor = cursorOf(job);
    pass.exhausted.add(cursor.key);
    expect(rankFeasibleHosts(pass, cursor)).toBe(false);
    expect(said).toStrictEqual(["g: work alike ahead of it found no room in this pass"]);
  });
});

describe("placeNext", () => {
  it("places one task a call on the best host with room, then gives the batch up when none has", () => {
    const { pass, said } = passOver({ a: { slots: 1 }, b: { slots: 2 } });
    const job = jobView("j", readyTasks(0, 1, 2, 3));
    const cursor = cursorOf(job);
    expect(placeAll(pass, job, cursor)).toStrictEqual(["0@b", "1@a", "2@b"]);
    expect(pass.plan.place[0]).toStrictEqual({ kind: "task", jobId: "j", taskIndex: 0, host: "b" });
    expect(said).toStrictEqual(["j: no host it matches has room left in this pass"]);
    expect(pass.exhausted.has(cursor.key)).toBe(true);
    expect(pass.slotsFree).toBe(0);
    expect(pass.placedJobs.get("j")).toBe(job);
  });

  it("takes each task's cpus and memory from its host's room and its cpus from the free slots", () => {
    const { pass, said } = passOver({ a: { slots: 8, memoryFreeMb: 3000 }, b: { slots: 2 } });
    const job = jobView("j", { cpus: 2, memoryMb: 1000, ...readyTasks(0, 1) });
    expect(placeAll(pass, job)).toStrictEqual(["0@a", "1@a"]);
    expect(roomsOf(pass)).toStrictEqual({ a: [4, 1000], b: [2, 8192] });
    expect(pass.slotsFree).toBe(6);
    // Its tasks all placed: nothing said, and the batch may place more.
    expect(said).toStrictEqual([]);
    expect(pass.exhausted.has(batchKey(job))).toBe(false);
  });

  it("skips the tasks placed first in room kept for them", () => {
    const { pass } = passOver({ a: {} });
    const job = jobView("j", readyTasks(0, 1, 2));
    pass.placedFirst.add(taskKey("j", 1));
    pass.placedFirst.add(taskKey("other", 0));
    expect(placeAll(pass, job)).toStrictEqual(["0@a", "2@a"]);
  });

  it("asks the batch's shared queue for its own need, which jobs alike use too", () => {
    const { pass } = passOver({ a: { slots: 1 }, b: { slots: 2 } });
    const first = cursorOf(jobView("j1"));
    const second = cursorOf(jobView("j2", readyTasks(0, 1)));
    expect(placeAll(pass, first.job, first)).toStrictEqual(["0@b"]);
    expect(first.shared!.queue).toBeDefined();
    expect(placeAll(pass, second.job, second)).toStrictEqual(["0@a", "1@b"]);
    expect(second.shared!.queue).toBe(first.shared!.queue);
  });

  it("puts a task grown after running out of memory where its memory fits, not in the batch's queue", () => {
    const { pass, said } = passOver({ a: { slots: 4, memoryFreeMb: 2048 }, b: { slots: 1 } });
    const taskMemoryMb = (index: number) => (index === 1 ? 4096 : undefined);
    const job = jobView("j", { memoryMb: 1000, taskMemoryMb, ...readyTasks(0, 1) });
    expect(placeAll(pass, job)).toStrictEqual(["0@a", "1@b"]);
    expect(roomsOf(pass)).toStrictEqual({ a: [3, 1048], b: [0, 4096] });
    expect(said).toStrictEqual([]);
  });

  it("a grown task first makes no queue of its size: the batch's tasks after it fit by their own", () => {
    const { pass } = passOver({ a: { slots: 4, memoryFreeMb: 2048 }, b: { slots: 1 } });
    const taskMemoryMb = (index: number) => (index === 0 ? 4096 : undefined);
    const cursor = cursorOf(jobView("j", { memoryMb: 1000, taskMemoryMb, ...readyTasks(0, 1, 2) }));
    rankFeasibleHosts(pass, cursor);
    placeNext(pass, cursor);
    expect(cursor.shared!.queue).toBeUndefined();
    while (placeNext(pass, cursor));
    expect(pass.plan.place.map((each) => `${each.taskIndex}@${each.host}`)).toStrictEqual([
      "0@b",
      "1@a",
      "2@a",
    ]);
  });

  it("says so of a grown task that fits nowhere, and goes on with the batch's others", () => {
    const { pass, said } = passOver({ a: {} });
    const taskMemoryMb = (index: number) => (index === 0 ? 9000 : undefined);
    const job = jobView("j", { memoryMb: 1000, taskMemoryMb, ...readyTasks(0, 1) });
    const cursor = cursorOf(job);
    expect(placeAll(pass, job, cursor)).toStrictEqual(["1@a"]);
    expect(said).toStrictEqual([
      "j: task 0 needs 9000 MB (grown after running out of memory): no host it matches has that free",
    ]);
    expect(pass.exhausted.has(cursor.key)).toBe(false);
  });

  it("puts a task with a rule of its own only where the rule allows", () => {
    const { pass } = passOver({ a: { slots: 4 }, b: { slots: 2 } });
    const job = jobView("j", {
      constrainedTasks: () => [{ index: 7, allows: (host) => host === "b" }],
      ...readyTasks(0),
    });
    expect(placeAll(pass, job)).toStrictEqual(["7@b", "0@a"]);
    expect(roomsOf(pass)).toStrictEqual({ a: [3, 8192], b: [1, 8192] });
  });

  it.each<[string, { waitReason?: string; lapsesAt?: number }, string, number | undefined]>([
    [
      "its own reason, and a pass again when the rule lapses",
      { waitReason: "it waits for host c", lapsesAt: NOW + 5000 },
      "j: it waits for host c",
      NOW + 5000,
    ],
    ["the pass's reason, and no pass asked for", {}, "j: task 7: no host it may go to has room", undefined],
  ])("says why a task with a rule allowing no host with room waits: %s", (_, rule, why, recheckAt) => {
    const { pass, said } = passOver({ a: {}, b: { slotsFree: 0 } });
    const job = jobView("j", {
      constrainedTasks: () => [{ index: 7, allows: (host) => host !== "a", ...rule }],
      ...readyTasks(0),
    });
    const cursor = cursorOf(job);
    expect(placeAll(pass, job, cursor)).toStrictEqual(["0@a"]);
    expect(said).toStrictEqual([why]);
    expect(pass.plan.recheckAt).toBe(recheckAt);
    expect(pass.exhausted.has(cursor.key)).toBe(false);
  });

  it("a pass asked for by a rule's lapse keeps the earliest asked", () => {
    const { pass } = passOver({ a: { slotsFree: 0 } });
    pass.recheckBy(NOW + 1000);
    const job = jobView("j", {
      constrainedTasks: () => [{ index: 7, allows: () => true, lapsesAt: NOW + 5000 }],
      ...readyTasks(),
    });
    placeAll(pass, job);
    expect(pass.plan.recheckAt).toBe(NOW + 1000);
  });
});

describe("a pass that asks for no reasons", () => {
  it("places the same, and turns away the same, saying nothing", () => {
    const pass = new Pass({ now: NOW, jobs: [], hosts: [hostView("a", { slots: 1 })] }, {});
    const ruled = { constrainedTasks: () => [{ index: 7, allows: () => true }], ...readyTasks() };
    const placed = [
      jobView("no match", { requirements: "host.speed > 5" }),
      jobView("grown", {
        memoryMb: 1000,
        taskMemoryMb: (i) => (i === 0 ? 9000 : undefined),
        ...readyTasks(0, 1),
      }),
      jobView("ruled", ruled),
      jobView("plain"),
      jobView("alike"),
      jobView("gang", { gang: { nodes: 2, nodesPerHost: 1, restartPool: null } }),
    ].map((job) => placeAll(pass, job));
    expect(placed).toStrictEqual([[], ["1@a"], [], [], [], []]);
  });
});

describe("placeNext: a gang", () => {
  const gang = (nodes: number, fields: Partial<NonNullable<JobView["gang"]>> = {}) => ({
    gang: { nodes, nodesPerHost: 1, restartPool: null, ...fields },
  });
  const ones = (...names: string[]): Record<string, HostFields> =>
    Object.fromEntries(names.map((name) => [name, { slots: 1 }]));

  it("places every rank at once, rank 0's host first, taking each rank's room", () => {
    const { pass } = passOver({ a: { slots: 2 }, b: { slots: 4 }, c: { slots: 3 } });
    const job = jobView("g", { cpus: 2, memoryMb: 100, ...gang(2) });
    const cursor = cursorOf(job);
    rankFeasibleHosts(pass, cursor);
    expect(placeNext(pass, cursor)).toBe(true);
    expect(pass.plan.place).toStrictEqual([
      { kind: "gang", jobId: "g", taskIndex: 0, host: "b", ranks: ["b", "c"] },
    ]);
    expect(roomsOf(pass)).toStrictEqual({ a: [2, 8192], b: [2, 8092], c: [1, 8092] });
    expect(pass.slotsFree).toBe(5);
    expect(placeNext(pass, cursor)).toBe(false);
    expect(pass.placedJobs.get("g")).toBe(job);
  });

  it("with a task's own grown memory", () => {
    const { pass } = passOver({ a: { slots: 3 }, b: { slots: 2, memoryFreeMb: 4096 }, c: { slots: 1 } });
    const job = jobView("g", { taskMemoryMb: () => 6000, ...gang(2) });
    expect(placeAll(pass, job)).toStrictEqual(["0@a+c"]);
    expect(roomsOf(pass)).toStrictEqual({ a: [2, 2192], b: [2, 4096], c: [0, 2192] });
  });

  it.each<[string, string | null, string | null, string]>([
    ["no restart pool", null, null, "0@a+b"],
    ["the server's restart pool is kept for replacements", null, "spare", "0@b+c"],
    ["the job's own restart pool", "spare", null, "0@b+c"],
    ["the job's own restart pool over the server's", "other", "spare", "0@a+b"],
  ])("%s", (_, own, server, expected) => {
    const { pass } = passOver(
      { a: { slots: 4, facts: { pool: "spare" } }, b: { slots: 2 }, c: { slots: 1 } },
      { policy: { restartPool: server } },
    );
    expect(placeAll(pass, jobView("g", gang(2, { restartPool: own })))).toStrictEqual([expected]);
  });

  it.each<[string, Partial<Pick<JobView, "createdAt" | "readySince">>, number, boolean]>([
    ["a gang that has not waited long holds no host", { createdAt: NOW - 299_000 }, 300, false],
    [
      "a gang waiting past the reserve time holds hosts as they free up",
      { createdAt: NOW - 300_000 },
      300,
      true,
    ],
    [
      "its wait counts from when its work became ready",
      { createdAt: 0, readySince: NOW - 299_000 },
      300,
      false,
    ],
    ["past a reserve time of the server's own", { createdAt: NOW - 61_000 }, 60, true],
  ])("%s", (_, times, gangReserveSeconds, holds) => {
    const { pass, said } = passOver(ones("a", "b", "c", "d"), { policy: { gangReserveSeconds } });
    pass.capacity.get("a")!.slotsFree = 0;
    pass.capacity.get("c")!.slotsFree = 0;
    pass.slotsFree = 2;
    const job = jobView("g", { ...times, ...gang(3) });
    expect(placeAll(pass, job)).toStrictEqual([]);
    expect(said).toStrictEqual([
      `g: its 3 ranks find no room at once${holds ? ": hosts are held for it as they free up" : ""}`,
    ]);
    // It holds the hosts closest to having room: b and d, with a slot free, then a by name.
    expect(pass.slotsFree).toBe(holds ? 0 : 2);
    expect(roomsOf(pass)).toStrictEqual(
      holds
        ? { a: [0, 0], b: [0, 0], c: [0, 8192], d: [0, 0] }
        : { a: [0, 8192], b: [1, 8192], c: [0, 8192], d: [1, 8192] },
    );
  });
});
