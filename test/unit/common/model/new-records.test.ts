// Fresh records: a task as submitted, the test that a task is still as it was made (any field
// touched since makes it not new), and an attempt as it starts.

import { describe, expect, it } from "vitest";
import { isNewTask, newAttempt, newTask } from "../../../../src/common/model/new-records.ts";
import type { TaskRecord } from "../../../../src/common/model/records.ts";

describe("newTask", () => {
  it("has no attempt, failure, loss, wait, result, checkpoint, migration or grown memory", () => {
    expect(newTask("7", 2, "waiting")).toEqual({
      jobId: "7",
      index: 2,
      state: "waiting",
      attempts: 0,
      failures: 0,
      losses: 0,
      systemFailures: 0,
      notBefore: null,
      resultAttempt: null,
      checkpoint: null,
      migration: null,
      memoryMb: null,
    });
  });
});

describe("isNewTask", () => {
  it.each<[string, Partial<TaskRecord>, boolean]>([
    ["as made", {}, true],
    ["another job's", { jobId: "8" }, false],
    ["another index", { index: 3 }, false],
    ["another state", { state: "running" }, false],
    ["an attempt", { attempts: 1 }, false],
    ["a failure", { failures: 1 }, false],
    ["a loss", { losses: 1 }, false],
    ["a system failure", { systemFailures: 1 }, false],
    ["a retry's wait", { notBefore: 1000 }, false],
    ["a result", { resultAttempt: 1 }, false],
    ["a checkpoint", { checkpoint: { generation: 1, bytes: 10, at: 1000 } }, false],
    ["a migration", { migration: { to: null, from: "h1" } }, false],
    ["grown memory", { memoryMb: 512 }, false],
  ])("%s: %s", (_, change, isNew) => {
    const task: TaskRecord = { ...newTask("7", 2, "pending"), ...change };
    expect(isNewTask(task, "7", 2, "pending")).toBe(isNew);
  });
});

describe("newAttempt", () => {
  it("starts now on one host, numbered by the task's attempts, with the task's memory", () => {
    const task: TaskRecord = { ...newTask("7", 2, "pending"), attempts: 3, memoryMb: 512 };
    expect(newAttempt(task, "h1", 1000)).toEqual({
      jobId: "7",
      taskIndex: 2,
      number: 3,
      host: "h1",
      placement: [{ host: "h1", rank: 0 }],
      state: "starting",
      outcome: null,
      reason: null,
      exitCode: null,
      restarted: false,
      startedAt: 1000,
      endedAt: null,
      stop: null,
      memoryMb: 512,
      usage: null,
    });
  });

  it("places a gang's ranks in order, rank 0's host as its host, restarted from a checkpoint", () => {
    const task: TaskRecord = {
      ...newTask("7", 0, "pending"),
      attempts: 1,
      checkpoint: { generation: 2, bytes: 10, at: 500 },
    };
    const attempt = newAttempt(task, ["h2", "h1", "h2"], 1000);
    expect(attempt.host).toBe("h2");
    expect(attempt.placement).toEqual([
      { host: "h2", rank: 0 },
      { host: "h1", rank: 1 },
      { host: "h2", rank: 2 },
    ]);
    expect(attempt.restarted).toBe(true);
  });
});
