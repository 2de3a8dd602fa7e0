// Which tasks a retry gives new attempts (a table over task states and the request), what it skips,
// and the message of a retry that retries nothing.

import { describe, expect, it } from "vitest";
import type { TaskState } from "../../../../src/common/model/states.ts";
import {
  nothingToRetry,
  type RetryRequest,
  retrySelection,
  skippedSummary,
} from "../../../../src/common/model/task-retry.ts";

const STATES: TaskState[] = ["succeeded", "failed", "cancelled", "running", "failed", "pending", "waiting"];

describe("retrySelection", () => {
  it.each<[string, RetryRequest, number[], [number, TaskState][]]>([
    ["neither flag: every failed or cancelled task", {}, [1, 2, 4], []],
    ["--failed: every failed task", { failed: true }, [1, 4], []],
    ["--tasks: those named that failed or were cancelled", { tasks: [1, 2] }, [1, 2], []],
    [
      "--tasks naming others: they are skipped with their state",
      { tasks: [0, 1, 3, 5, 6] },
      [1],
      [
        [0, "succeeded"],
        [3, "running"],
        [5, "pending"],
        [6, "waiting"],
      ],
    ],
    [
      "--tasks with --failed: a cancelled one named is skipped",
      { tasks: [2, 4], failed: true },
      [4],
      [[2, "cancelled"]],
    ],
  ])("%s", (_, request, retry, skipped) => {
    const selection = retrySelection(STATES, request);
    expect(selection.retry).toEqual(retry);
    expect(selection.skipped.map(({ task, state }) => [task, state])).toEqual(skipped);
  });

  it("answers the tasks in order, whatever order they were named in", () => {
    expect(retrySelection(STATES, { tasks: [4, 2, 1] }).retry).toEqual([1, 2, 4]);
  });
});

describe("a retry that retries nothing", () => {
  it.each<[TaskState[], RetryRequest, string]>([
    [["succeeded", "succeeded"], {}, "job 7 has no failed or cancelled task to retry"],
    [["succeeded", "cancelled"], { failed: true }, "job 7 has no failed task to retry"],
    [
      ["succeeded", "running", "running"],
      { tasks: [0, 1, 2] },
      "nothing to retry in job 7: task 0 succeeded; tasks 1, 2 running (only failed or cancelled tasks are retried)",
    ],
  ])("%j %j: %s", (states, request, message) => {
    const selection = retrySelection(states, request);
    expect(selection.retry).toEqual([]);
    expect(nothingToRetry("7", request, selection)).toBe(message);
  });

  it("summarises skipped tasks by state", () => {
    expect(
      skippedSummary([
        { task: 4, state: "succeeded" },
        { task: 5, state: "running" },
        { task: 6, state: "running" },
        { task: 7, state: "running" },
      ]),
    ).toBe("task 4 succeeded; tasks 5-7 running");
  });
});
