import { describe, expect, it } from "vitest";
import { type FailedTask, type OutcomeJob, outcomeLine } from "../../../src/cli/job-outcome.ts";

const attempt = (
  number: number,
  outcome: string | null,
  exitCode: number | null,
  reason: string | null = null,
) => ({ number, outcome, exitCode, reason }) as FailedTask["attempts"][number];

describe("outcomeLine", () => {
  const cases: [what: string, job: OutcomeJob, failed: FailedTask | null, line: string][] = [
    ["succeeded", { id: "3", state: "succeeded" }, null, "job 3: succeeded"],
    ["cancelled", { id: "3", state: "cancelled" }, null, "job 3: cancelled"],
    [
      "a workflow's job by its name",
      { id: "5", state: "cancelled", workflowName: "prep" },
      null,
      "job 5 (prep): cancelled",
    ],
    [
      "failed with an exit code",
      { id: "4", state: "failed" },
      { index: 2, attempts: [attempt(1, "failed", 1)] },
      "job 4: failed (task 2 exited 1)",
    ],
    [
      "the latest attempt's exit code",
      { id: "4", state: "failed" },
      { index: 0, attempts: [attempt(2, "failed", 9), attempt(1, "failed", 3)] },
      "job 4: failed (task 0 exited 9)",
    ],
    [
      "lost, with its reason",
      { id: "6", state: "failed" },
      { index: 0, attempts: [attempt(1, "lost", null, "host b1 lost")] },
      "job 6: failed (task 0 lost: host b1 lost)",
    ],
    [
      "an exit 0 the job failed all the same",
      { id: "6", state: "failed" },
      { index: 1, attempts: [attempt(1, "failed", 0, "outputs missing")] },
      "job 6: failed (task 1 failed: outputs missing)",
    ],
    [
      "a task that never started",
      { id: "7", state: "failed" },
      { index: 0, attempts: [] },
      "job 7: failed (task 0 never started)",
    ],
    ["failed, no task found", { id: "7", state: "failed" }, null, "job 7: failed"],
    ["not ended (a timeout)", { id: "8", state: "running" }, null, "job 8: running (not ended)"],
  ];
  it.each(cases)("%s", (_, job, failed, line) => {
    expect(outcomeLine(job, failed)).toBe(line);
  });
});
