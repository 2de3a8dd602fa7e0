// A new job's untouched tasks stored as one range (src/broker/store/new-task-ranges.ts): the rows
// a job has, with the range's untouched tasks made where it has none; and a large array on a real
// SQLite store that comes back whole after a restart, its started tasks as they were.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NEW_TASKS_AS_ONE_CHANGE_MIN } from "../../../../src/broker/reactor/writes.ts";
import {
  jobTasksWithUntouched,
  type NewTaskRange,
  taskOrUntouched,
  taskStatesWithUntouched,
  withUntouchedTasks,
} from "../../../../src/broker/store/new-task-ranges.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { newTask } from "../../../../src/common/model/new-records.ts";
import type { TaskRecord } from "../../../../src/common/model/records.ts";
import { Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";

const touched = (jobId: string, index: number): TaskRecord => ({
  ...newTask(jobId, index, "running"),
  attempts: 1,
});
const range = (jobId: string, count: number, state: TaskRecord["state"] = "pending"): NewTaskRange => ({
  jobId,
  state,
  count,
});
const fresh = (jobId: string, indices: number[], state: TaskRecord["state"] = "pending") =>
  indices.map((index) => newTask(jobId, index, state));

describe("jobTasksWithUntouched", () => {
  it.each<[string, TaskRecord[], NewTaskRange | undefined, TaskRecord[]]>([
    ["no range: the rows", [touched("j", 0)], undefined, [touched("j", 0)]],
    ["an empty range: the rows", [touched("j", 3)], range("j", 0), [touched("j", 3)]],
    ["a range and no rows", [], range("j", 3, "held"), fresh("j", [0, 1, 2], "held")],
    [
      "a row inside",
      [touched("j", 1)],
      range("j", 3),
      [newTask("j", 0, "pending"), touched("j", 1), newTask("j", 2, "pending")],
    ],
    [
      "rows at both ends",
      [touched("j", 0), touched("j", 2)],
      range("j", 3),
      [touched("j", 0), newTask("j", 1, "pending"), touched("j", 2)],
    ],
    [
      "a row past the range",
      [touched("j", 1), touched("j", 5)],
      range("j", 2),
      [newTask("j", 0, "pending"), touched("j", 1), touched("j", 5)],
    ],
  ])("%s", (_what, rows, given, expected) => {
    expect(jobTasksWithUntouched(rows, given)).toStrictEqual(expected);
  });
});

describe("withUntouchedTasks", () => {
  it("without ranges answers the rows themselves, the order never asked", () => {
    const rows = [touched("a", 0)];
    expect(
      withUntouchedTasks(rows, [], () => {
        throw new Error("asked");
      }),
    ).toBe(rows);
  });

  it("places each job's tasks in the database's order of jobs, a job of a range alone included", () => {
    const rows = [touched("a", 0), touched("c", 1)];
    const tasks = withUntouchedTasks(rows, [range("c", 2), range("b", 1, "held")], () => ["a", "b", "c"]);
    expect(tasks).toStrictEqual([
      touched("a", 0),
      newTask("b", 0, "held"),
      newTask("c", 0, "pending"),
      touched("c", 1),
    ]);
  });
});

describe("taskStatesWithUntouched", () => {
  it.each<[string, [number, string][], NewTaskRange | undefined, string[]]>([
    [
      "rows only",
      [
        [0, "running"],
        [1, "failed"],
      ],
      undefined,
      ["running", "failed"],
    ],
    ["a range only", [], range("j", 3, "held"), ["held", "held", "held"]],
    ["rows over the range", [[1, "running"]], range("j", 3), ["pending", "running", "pending"]],
    ["a row just past the range", [[2, "succeeded"]], range("j", 2), ["pending", "pending", "succeeded"]],
    ["nothing", [], undefined, []],
  ])("%s", (_what, rows, given, expected) => {
    expect(taskStatesWithUntouched(rows, given)).toStrictEqual(expected);
  });
});

describe("taskOrUntouched", () => {
  it.each<[string, TaskRecord | undefined, NewTaskRange | undefined, number, TaskRecord | null]>([
    ["its row", touched("j", 2), range("j", 5), 2, touched("j", 2)],
    ["untouched in the range", undefined, range("j", 5, "waiting"), 4, newTask("j", 4, "waiting")],
    ["past the range", undefined, range("j", 5), 5, null],
    ["no row, no range", undefined, undefined, 0, null],
  ])("%s", (_what, row, given, index, expected) => {
    expect(taskOrUntouched(row, given, index)).toStrictEqual(expected);
  });
});

describe("a large array on a real store", () => {
  let harness: Harness;

  beforeEach(async () => {
    harness = new Harness();
    await harness.start();
  });

  afterEach(async () => {
    await harness.close();
  });

  it("comes back whole after a restart, its started tasks as they were, its untouched ones new", async () => {
    const count = NEW_TASKS_AS_ONE_CHANGE_MIN + 44;
    const { core } = harness;
    await core.agents.attachHost(hello("h1", [], 2));
    const job = await submitOn(core, validateJobSpec({ command: "true", array: { count } }), "alice");
    await settle();
    const started = harness.starts().filter((start) => start.jobId === job.id);
    expect(started.map((start) => start.taskIndex)).toStrictEqual([0, 1]);
    const stored = await harness.store.loadJob(job.id);
    expect(stored?.tasks).toHaveLength(count);
    expect(stored?.tasks.slice(0, 3).map((task) => task.state)).toStrictEqual([
      "running",
      "running",
      "pending",
    ]);

    const again = await harness.restart();
    const entry = again.read.findJob(job.id);
    expect(entry?.tasks).toHaveLength(count);
    expect(entry?.tasks.map((task) => task.state)).toStrictEqual([
      "running",
      "running",
      ...Array.from({ length: count - 2 }, () => "pending"),
    ]);
    expect(entry?.tasks[count - 1]).toStrictEqual(newTask(job.id, count - 1, "pending"));
    expect((await again.read.readTask(job.id, count - 1)).task).toStrictEqual(
      newTask(job.id, count - 1, "pending"),
    );
  });
});
