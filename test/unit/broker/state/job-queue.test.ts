import { describe, expect, it } from "vitest";
import { JobEntry } from "../../../../src/broker/state/job-entry.ts";
import { JobQueue } from "../../../../src/broker/state/job-queue.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import type { JobRecord, TaskRecord } from "../../../../src/common/model/records.ts";

let seq = 0;
function entry(id: string, priority: number, createdAt: number, tasks = 1, owner = "alice"): JobEntry {
  const record: JobRecord = {
    id,
    name: id,
    owner,
    state: "pending",
    priority,
    held: false,
    cancelRequested: false,
    createdAt,
    endedAt: null,
    spec: validateJobSpec({ command: "true" }),
    inputs: [],
    inputDigests: null,
    dynamicRequirements: null,
    submitKey: null,
    slowHosts: [],
    workflow: null,
  };
  const list: TaskRecord[] = Array.from({ length: tasks }, (_, index) => ({
    jobId: id,
    index,
    state: "pending",
    attempts: 0,
    failures: 0,
    losses: 0,
    systemFailures: 0,
    notBefore: null,
    resultAttempt: null,
    checkpoint: null,
    migration: null,
    memoryMb: null,
  }));
  return new JobEntry(record, ++seq, list);
}

describe("JobQueue", () => {
  it.each([
    [
      "arrival order when priorities are equal",
      [
        ["a", 0, 1],
        ["b", 0, 2],
        ["c", 0, 3],
      ],
      ["a", "b", "c"],
    ],
    [
      "higher priority first, wherever it arrives",
      [
        ["a", 0, 1],
        ["b", 5, 2],
        ["c", 1, 3],
      ],
      ["b", "c", "a"],
    ],
    [
      "an older job arriving late goes before newer ones",
      [
        ["b", 0, 20],
        ["c", 0, 30],
        ["a", 0, 10],
      ],
      ["a", "b", "c"],
    ],
  ] as [string, [string, number, number][], string[]][])("%s", (_, rows, expected) => {
    const queue = new JobQueue();
    for (const [id, priority, createdAt] of rows) queue.add(entry(id, priority, createdAt));
    expect(queue.schedulable().map((job) => job.id)).toEqual(expected);
  });

  it("keeps a job once, drops jobs without pending work, and skips held ones while keeping them", () => {
    const queue = new JobQueue();
    const a = entry("a", 0, 1);
    const b = entry("b", 0, 2);
    const c = entry("c", 0, 3);
    for (const job of [a, b, a, c]) queue.add(job);
    expect(queue.size).toBe(3);
    b.setTaskState(b.tasks[0], "running");
    c.record.held = true;
    expect(queue.schedulable().map((job) => job.id)).toEqual(["a"]);
    expect(queue.size).toBe(2);
    c.record.held = false;
    expect(queue.schedulable().map((job) => job.id)).toEqual(["a", "c"]);
  });

  it("finds a job that left (its task started) and came back (its host lost), at its place, before and after a compaction", () => {
    const queue = new JobQueue();
    const jobs = Array.from({ length: 5 }, (_, i) => entry(`j${i}`, 0, i));
    for (const job of jobs) queue.add(job);
    // j0 (the head) and j2 (in the middle) start: the next read drops them.
    for (const job of [jobs[0], jobs[2]]) job.setTaskState(job.tasks[0], "running");
    expect(queue.schedulable().map((job) => job.id)).toEqual(["j1", "j3", "j4"]);
    expect(queue.topPriority()).toBe(0);
    for (const job of [jobs[0], jobs[2]]) {
      job.setTaskState(job.tasks[0], "pending");
      queue.add(job);
    }
    expect(queue.schedulable().map((job) => job.id)).toEqual(["j0", "j1", "j2", "j3", "j4"]);
    expect(queue.ownerQueues().map((own) => own.peek()?.id)).toEqual(["j0"]);
    expect(queue.size).toBe(5);
    // Enough jobs leave for a compaction; the rest keep their order, and a job back after it too.
    const many = Array.from({ length: 3000 }, (_, i) => entry(`m${i}`, 0, 100 + i));
    for (const job of many) queue.add(job);
    for (const job of many) queue.delete(job);
    queue.delete(jobs[3]);
    queue.add(entry("late", 0, 2.5));
    queue.add(jobs[3]);
    expect(queue.schedulable().map((job) => job.id)).toEqual(["j0", "j1", "j2", "late", "j3", "j4"]);
    expect(queue.size).toBe(6);
  });

  it("gives each owner's jobs in queue order and reads an owner's queue only as far as it is asked", () => {
    const queue = new JobQueue();
    const looked = new Set<string>();
    const watched = (job: JobEntry) =>
      new Proxy(job, {
        get(target, property) {
          if (property === "schedulable") looked.add(target.id);
          // The entry's own fields are private (#): its getters run on it, not on the proxy.
          return Reflect.get(target, property, target);
        },
      });
    for (let i = 0; i < 10_000; i++) queue.add(watched(entry(`a${i}`, 0, i, 1, "alice")));
    queue.add(watched(entry("b0", 0, 5, 1, "bob")));
    queue.add(watched(entry("b1", 3, 20_000, 1, "bob")));
    const owners = queue.ownerQueues();
    expect(owners.map((own) => [own.owner, own.peek()?.id])).toEqual([
      ["alice", "a0"],
      ["bob", "b1"],
    ]);
    const bob = owners[1];
    bob.advance();
    expect(bob.peek()?.id).toBe("b0");
    bob.advance();
    expect(bob.peek()).toBeNull();
    // Alice's first job only, not her 10,000.
    expect([...looked].filter((id) => id.startsWith("a"))).toEqual(["a0"]);
    expect(queue.hasReady()).toBe(true);
    expect(queue.topPriority()).toBe(3);
  });

  it("lets go of the jobs that left at its head (an ended job must be free to leave memory)", () => {
    const queue = new JobQueue();
    const jobs = Array.from({ length: 5000 }, (_, i) => entry(`j${i}`, 0, i));
    for (const job of jobs) queue.add(job);
    for (const job of jobs) job.setTaskState(job.tasks[0], "running");
    expect(queue.schedulable()).toEqual([]);
    expect(queue.topPriority()).toBeNull();
    expect(queue.held).toBe(0);
    queue.add(entry("next", 0, 10_000));
    expect(queue.held).toBe(1);
    expect(queue.schedulable().map((job) => job.id)).toEqual(["next"]);
  });
});

describe("JobEntry.constrainedTasks", () => {
  const found = (job: JobEntry, now = 0) => [...job.constrainedTasks(now)].map((task) => task.index);

  it("finds the ready tasks with a migration rule, set on the entry or loaded with the task, and only those", () => {
    const job = entry("m", 0, 1, 5);
    expect(found(job)).toEqual([]);
    job.setMigration(job.tasks[3], { to: "h2", from: "h1" });
    job.setMigration(job.tasks[1], { to: null, from: "h1" });
    expect(found(job).sort()).toEqual([1, 3]);
    const [toH2] = [...job.constrainedTasks(0)].filter((task) => task.index === 3);
    expect([toH2.allows("h2"), toH2.allows("h1"), toH2.allows("h3")]).toEqual([true, false, false]);
    // A task placed again may go anywhere; one not ready (running, or backing off) is not offered.
    job.setMigration(job.tasks[3], null);
    job.setTaskState(job.tasks[1], "running");
    expect(found(job)).toEqual([]);
    job.setTaskState(job.tasks[1], "pending");
    expect(found(job)).toEqual([1]);
    job.tasks[1].notBefore = 50;
    expect(found(job, 10)).toEqual([]);
    expect(found(job, 50)).toEqual([1]);
    // Recovered from the store with the rule on the record.
    job.tasks[1].notBefore = null;
    const recovered = new JobEntry(job.record, ++seq, job.tasks);
    expect(found(recovered)).toEqual([1]);
  });
});
