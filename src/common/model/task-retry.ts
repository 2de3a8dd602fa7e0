// `steward retry ID [--failed] [--tasks LIST]`: which tasks of a job get new attempts. Only a task
// that ended failed or cancelled is retried; with `--failed`, only failed ones; without `--tasks`,
// every such task of the job. A task named that succeeded, or that has not ended, is skipped and
// the answer says so; a retry that would retry nothing is refused, naming why.

import type { TaskState } from "./states.ts";
import { formatTaskList } from "./task-list.ts";

export interface RetryRequest {
  /** The task indexes named (`--tasks`); absent: every task of the job. */
  tasks?: readonly number[];
  /** Only failed tasks (`--failed`); otherwise failed and cancelled ones. */
  failed?: boolean;
}

export interface RetrySelection {
  /** The tasks to give new attempts, ascending. */
  retry: number[];
  /** Tasks named that are not retried, with their state (only those `--tasks` named). */
  skipped: { task: number; state: TaskState }[];
}

/** The states a retry takes a task from. */
export function retryableStates(failedOnly: boolean): readonly TaskState[] {
  return failedOnly ? ["failed"] : ["failed", "cancelled"];
}

/** Which of a job's tasks (their states, by index) a retry gives new attempts, and which it skips. */
export function retrySelection(states: readonly TaskState[], request: RetryRequest): RetrySelection {
  const retryable = new Set(retryableStates(request.failed === true));
  const selection: RetrySelection = { retry: [], skipped: [] };
  const named = request.tasks ?? states.keys();
  for (const index of named) {
    const state = states[index];
    if (retryable.has(state)) selection.retry.push(index);
    else if (request.tasks) selection.skipped.push({ task: index, state });
  }
  selection.retry.sort((a, b) => a - b);
  return selection;
}

/** Tasks skipped, grouped by state: "task 4 succeeded; tasks 5-7 running". */
export function skippedSummary(skipped: RetrySelection["skipped"]): string {
  const byState = new Map<TaskState, number[]>();
  for (const { task, state } of skipped) byState.set(state, [...(byState.get(state) ?? []), task]);
  return [...byState]
    .map(([state, tasks]) => `${tasks.length === 1 ? "task" : "tasks"} ${formatTaskList(tasks)} ${state}`)
    .join("; ");
}

/** Why a retry retries nothing: the message of its refusal. */
export function nothingToRetry(id: string, request: RetryRequest, selection: RetrySelection): string {
  const what = request.failed ? "failed" : "failed or cancelled";
  if (!request.tasks) return `job ${id} has no ${what} task to retry`;
  return `nothing to retry in job ${id}: ${skippedSummary(selection.skipped)} (only ${what} tasks are retried)`;
}
