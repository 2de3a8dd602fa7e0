// `steward cancel ID ID...`: what it prints of each job and workflow, and its exit code.

import { describe, expect, it } from "vitest";
import { CANCEL_EXIT, CANCEL_PENDING_NOTE, cancelReport } from "../../../src/cli/cancel-report.ts";
import type { WorkflowActed } from "../../../src/cli/workflow-action.ts";
import type { JobState } from "../../../src/common/model/states.ts";

const WORKFLOW: WorkflowActed = {
  value: { workflow: "flow-2", state: "cancelled", jobs: [{ name: "prep", job: "5", state: "cancelled" }] },
  lines: ["workflow flow-2: cancelled", "job 5 (prep): cancelled"],
};

describe("cancelReport", () => {
  const jobs = new Map<string, JobState | null>([
    ["3", "cancelled"],
    ["4", "succeeded"],
    ["6", "running"],
    ["9", null],
  ]);
  const workflows = new Map<string, WorkflowActed | null>([
    ["flow-2", WORKFLOW],
    ["flow-8", null],
  ]);

  it("one line per id in the order named, an ended job as it is, a workflow's block; exit 0", () => {
    const report = cancelReport(["4", "flow-2", "3", "6"], jobs, workflows);
    expect(report.lines).toEqual([
      "job 4: succeeded",
      "workflow flow-2: cancelled",
      "job 5 (prep): cancelled",
      "job 3: cancelled",
      `job 6: running${CANCEL_PENDING_NOTE}`,
    ]);
    expect(report.notes).toEqual([]);
    expect(report.exitCode).toBe(CANCEL_EXIT.done);
    expect(report.json).toEqual([
      { id: "4", state: "succeeded" },
      WORKFLOW.value,
      { id: "3", state: "cancelled" },
      { id: "6", state: "running" },
    ]);
  });

  it("a job or workflow that does not exist is named on stderr, exit 1, the others reported", () => {
    const report = cancelReport(["9", "3", "flow-8", "10"], jobs, workflows);
    expect(report.lines).toEqual(["job 3: cancelled"]);
    expect(report.notes).toEqual(["no job 9", "no workflow flow-8", "no job 10"]);
    expect(report.exitCode).toBe(CANCEL_EXIT.missing);
    expect(report.json).toEqual([
      { id: "9", state: null },
      { id: "3", state: "cancelled" },
      null,
      { id: "10", state: null },
    ]);
  });
});
