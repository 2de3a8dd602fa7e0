import { describe, expect, it } from "vitest";
import { compareQueueOrder } from "../../../../src/broker/scheduler/queue-order.ts";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import {
  ArrayThrottle,
  throttleAllows,
  throttleReason,
  throttleRoom,
} from "../../../../src/broker/scheduler/stages/throttle.ts";
import type { HostView, JobView } from "../../../../src/broker/scheduler/view.ts";
import { JobEntry } from "../../../../src/broker/state/job-entry.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { newAttempt, newTask } from "../../../../src/common/model/new-records.ts";
import type { JobRecord } from "../../../../src/common/model/records.ts";

describe("throttleAllows / throttleReason", () => {
  const cases: {
    parallel: number | undefined;
    live: number;
    placed: number;
    allows: boolean;
    reason: string | null;
  }[] = [
    { parallel: undefined, live: 50, placed: 50, allows: true, reason: null },
    { parallel: 3, live: 0, placed: 0, allows: true, reason: null },
    { parallel: 3, live: 2, placed: 0, allows: true, reason: null },
    { parallel: 3, live: 1, placed: 1, allows: true, reason: null },
    {
      parallel: 3,
      live: 3,
      placed: 0,
      allows: false,
      reason: "3 of its tasks run, the most its array allows at once (parallel: 3)",
    },
    {
      parallel: 3,
      live: 1,
      placed: 2,
      allows: false,
      reason: "1 of its tasks run and 2 start in this pass, the most its array allows at once (parallel: 3)",
    },
    // Lowered below what runs: nothing more starts (none is stopped).
    {
      parallel: 2,
      live: 5,
      placed: 0,
      allows: false,
      reason: "5 of its tasks run, the most its array allows at once (parallel: 2)",
    },
  ];
  it.each(cases)(
    "parallel $parallel, $live live, $placed placed",
    ({ parallel, live, placed, allows, reason }) => {
      const job = { parallel, liveTasks: live };
      expect(throttleAllows(job, placed)).toBe(allows);
      expect(throttleReason(job, placed)).toBe(reason);
    },
  );

  it.each([
    { parallel: undefined, live: 7, room: Number.POSITIVE_INFINITY },
    { parallel: 3, live: 1, room: 2 },
    { parallel: 3, live: 3, room: 0 },
    { parallel: 2, live: 5, room: 0 },
  ])("throttleRoom: parallel $parallel, $live live -> $room", ({ parallel, live, room }) => {
    expect(throttleRoom({ parallel, liveTasks: live })).toBe(room);
  });

  it("ArrayThrottle counts placements of throttled jobs only", () => {
    const throttle = new ArrayThrottle();
    const limited = { id: "a", parallel: 2, liveTasks: 1 };
    const free = { id: "b", parallel: undefined, liveTasks: 9 };
    expect(throttle.reason(limited)).toBeNull();
    throttle.placed(limited);
    expect(throttle.reason(limited)).toMatch(/parallel: 2/);
    throttle.placed(free);
    expect(throttle.reason(free)).toBeNull();
  });
});

function host(name: string, slots: number): HostView {
  return {
    name,
    state: "ready",
    connected: true,
    slots,
    slotsFree: slots,
    memoryFreeMb: 8192,
    facts: {
      name,
      pool: "local",
      os: "linux",
      arch: "x86_64",
      cpus: slots,
      memoryMb: 8192,
      memFreeMb: 8192,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: 10_000,
      speed: 1,
      labels: {},
      slotsFree: slots,
    },
  };
}

function arrayJob(id: string, tasks: number, parallel: number | undefined, liveTasks = 0, seq = 0): JobView {
  return {
    id,
    priority: 0,
    createdAt: 0,
    seq,
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: null,
    parallel,
    liveTasks,
    *readyTasks() {
      for (let index = liveTasks; index < tasks; index++) yield index;
    },
  };
}

describe("schedule with an array's throttle", () => {
  const pass = (jobs: JobView[], slots = 16) => {
    const unplaced: string[] = [];
    const plan = schedule(
      { now: 0, jobs: [...jobs].sort(compareQueueOrder), hosts: [host("h", slots)] },
      { unplaced: (job, why) => unplaced.push(`${job.id}: ${why}`) },
    );
    const placed: Record<string, number> = {};
    for (const each of plan.place) placed[each.jobId] = (placed[each.jobId] ?? 0) + 1;
    return { placed, unplaced };
  };

  it.each([
    { parallel: undefined, live: 0, placed: 16 },
    { parallel: 3, live: 0, placed: 3 },
    { parallel: 3, live: 2, placed: 1 },
    { parallel: 3, live: 3, placed: 0 },
    { parallel: 30, live: 0, placed: 16 },
  ])("parallel $parallel with $live running places $placed", ({ parallel, live, placed }) => {
    const result = pass([arrayJob("a", 20, parallel, live)]);
    expect(result.placed.a ?? 0).toBe(placed);
  });

  it("says why, and the slots it leaves go to the jobs behind it", () => {
    const result = pass([arrayJob("a", 20, 3, 0, 0), arrayJob("b", 20, undefined, 0, 1)], 8);
    expect(result.placed).toEqual({ a: 3, b: 5 });
    expect(result.unplaced).toContain(
      "a: 0 of its tasks run and 3 start in this pass, the most its array allows at once (parallel: 3)",
    );
  });
});

describe("JobEntry keeps its live tasks counted", () => {
  const spec = validateJobSpec({
    command: "true",
    array: { count: 5, parallel: 2, params: ["a", "b", "c", "d", "e"] },
  });
  const record: JobRecord = {
    id: "7",
    name: "x",
    owner: "u",
    state: "pending",
    priority: 0,
    held: false,
    cancelRequested: false,
    createdAt: 0,
    endedAt: null,
    spec,
    inputs: [],
    inputDigests: null,
    dynamicRequirements: null,
    submitKey: null,
    slowHosts: [],
    workflow: null,
  };
  it("counts a task once whatever its live attempts, and forgets it when the last ends", () => {
    const tasks = Array.from({ length: 5 }, (_, index) => newTask("7", index, "pending"));
    const job = new JobEntry(record, 1, tasks);
    expect(job.parallel).toBe(2);
    expect(job.liveTasks).toBe(0);
    const first = newAttempt({ ...tasks[0], attempts: 1 }, ["h"], 0);
    const replica = newAttempt({ ...tasks[0], attempts: 2 }, ["g"], 0);
    const other = newAttempt({ ...tasks[1], attempts: 1 }, ["h"], 0);
    job.addAttempt(first);
    job.addAttempt(replica);
    job.addAttempt(other);
    expect(job.liveTasks).toBe(2);
    first.state = "ended";
    job.attemptEnded(first);
    expect(job.liveTasks).toBe(2);
    replica.state = "ended";
    job.attemptEnded(replica);
    expect(job.liveTasks).toBe(1);
    // An ended attempt read back (recovery) holds nothing.
    const recovered = new JobEntry(record, 1, tasks);
    recovered.addAttempt(first);
    recovered.addAttempt(other);
    expect(recovered.liveTasks).toBe(1);
  });
});
