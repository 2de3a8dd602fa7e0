// A new job's tasks as one store change: many untouched tasks as putNewTasks (the store keeps
// them as one range), anything else as putTasks of the records themselves.

import { describe, expect, it } from "vitest";
import { NEW_TASKS_AS_ONE_CHANGE_MIN, newTasksChange } from "../../../../src/broker/reactor/writes.ts";
import { newTask } from "../../../../src/common/model/new-records.ts";
import type { TaskRecord } from "../../../../src/common/model/records.ts";

const fresh = (count: number, state: TaskRecord["state"] = "pending") =>
  Array.from({ length: count }, (_, i) => newTask("j", i, state));

describe("newTasksChange", () => {
  it.each<[string, TaskRecord[], string]>([
    ["many new pending tasks", fresh(NEW_TASKS_AS_ONE_CHANGE_MIN), "putNewTasks"],
    ["many new held tasks", fresh(1000, "held"), "putNewTasks"],
    ["fewer than the least", fresh(NEW_TASKS_AS_ONE_CHANGE_MIN - 1), "putTasks"],
    ["none", [], "putTasks"],
    [
      "one task with a memory of its own",
      fresh(1000).map((t, i) => (i === 9 ? { ...t, memoryMb: 64 } : t)),
      "putTasks",
    ],
    ["two states", fresh(1000).map((t, i) => (i === 0 ? { ...t, state: "held" as const } : t)), "putTasks"],
    ["indices out of order", fresh(1000).reverse(), "putTasks"],
  ])("%s", (_what, tasks, op) => {
    const change = newTasksChange("j", tasks);
    expect(change.op).toBe(op);
    if (change.op === "putNewTasks")
      expect(change).toStrictEqual({
        op: "putNewTasks",
        jobId: "j",
        count: tasks.length,
        state: tasks[0].state,
      });
    else expect(change).toStrictEqual({ op: "putTasks", tasks });
  });
});
