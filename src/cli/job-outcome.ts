// The line `steward wait` and `submit --wait` write to stderr for each job once it has ended (or
// when the wait gives up): its state, and for a failed job what its first failed task did.

import type { Attempt } from "../common/api/jobs.ts";

/** What the line needs of a job: its id, state and, in a workflow, its name there. */
export interface OutcomeJob {
  id: string;
  state: string;
  workflowName?: string | null;
}

/** The first failed task of a failed job, with its attempts. */
export interface FailedTask {
  index: number;
  attempts: readonly Pick<Attempt, "number" | "outcome" | "exitCode" | "reason">[];
}

const ENDED = new Set(["succeeded", "failed", "cancelled"]);

/**
 * `job 3: succeeded`, `job 4: failed (task 2 exited 1)`, `job 5: failed (task 0 lost: host b1
 * lost)`, `job 6 (prep): cancelled`; a job that has not ended: `job 7: running (not ended)`.
 */
export function outcomeLine(job: OutcomeJob, failed: FailedTask | null = null): string {
  const who = job.workflowName ? `job ${job.id} (${job.workflowName})` : `job ${job.id}`;
  if (!ENDED.has(job.state)) return `${who}: ${job.state} (not ended)`;
  if (job.state !== "failed" || failed === null) return `${who}: ${job.state}`;
  return `${who}: failed (${failureDetail(failed)})`;
}

/** What a failed task's latest attempt did: its exit code, or its outcome and reason. */
export function failureDetail(task: FailedTask): string {
  const last = [...task.attempts].sort((a, b) => b.number - a.number)[0];
  if (!last) return `task ${task.index} never started`;
  if (last.exitCode !== null && last.exitCode !== 0) return `task ${task.index} exited ${last.exitCode}`;
  const outcome = last.outcome ?? "failed";
  return `task ${task.index} ${outcome}${last.reason ? `: ${last.reason}` : ""}`;
}
