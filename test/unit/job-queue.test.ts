import { describe, expect, it } from "vitest";
import { validateJobSpec } from "../../src/model/jobfile.ts";
import type { JobRecord, TaskRecord } from "../../src/model/records.ts";
import { JobEntry } from "../../src/state/job-entry.ts";
import { JobQueue } from "../../src/state/job-queue.ts";

let seq = 0;
function entry(id: string, priority: number, createdAt: number, tasks = 1): JobEntry {
  const record: JobRecord = {
    id,
    name: id,
    owner: "alice",
    state: "pending",
    priority,
    held: false,
    cancelRequested: false,
    createdAt,
    endedAt: null,
    spec: validateJobSpec({ command: "true" }),
    inputs: [],
    dynamicRequirements: null,
    submitKey: null,
    slowHosts: [],
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
});
