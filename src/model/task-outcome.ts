// What happens to a task when one of its attempts ends (guarantee 5: failures are told apart).

import type { TaskRecord } from "./records.ts";
import type { AttemptOutcome, TaskState } from "./states.ts";

/** A task lost this many times is failed as a poison task (DESIGN.md, guarantee 5). */
export const POISON_LOSS_LIMIT = 5;
/** Retry back-off never waits longer than this. */
export const MAX_RETRY_BACKOFF_SECONDS = 600;
/** Back-off is spread by up to this fraction either way, so retries of many tasks do not land together. */
export const RETRY_JITTER = 0.2;

/**
 * Delay before the next attempt after `failures` application failures: backoffSeconds doubled per
 * failure after the first, capped, with jitter. `random` is in [0, 1).
 */
export function retryDelayMs(backoffSeconds: number, failures: number, random: number): number {
  if (backoffSeconds <= 0) return 0;
  const exponential = backoffSeconds * 2 ** Math.max(0, failures - 1);
  const capped = Math.min(exponential, Math.max(backoffSeconds, MAX_RETRY_BACKOFF_SECONDS));
  const jitter = 1 + RETRY_JITTER * (2 * random - 1);
  return Math.round(capped * jitter * 1000);
}

export interface AttemptEnd {
  number: number;
  outcome: AttemptOutcome;
  reason: string | null;
}

export interface RetryPolicy {
  maxAttempts: number;
  backoffSeconds: number;
}

export interface TaskAfterAttempt {
  state: TaskState;
  failures: number;
  losses: number;
  notBefore: number | null;
  resultAttempt: number | null;
  /** Why the task ended or goes round again, for the job's event history. */
  note: string;
}

export function taskAfterAttempt(
  task: Pick<TaskRecord, "failures" | "losses" | "resultAttempt">,
  end: AttemptEnd,
  retry: RetryPolicy,
  now: number,
  random: number,
): TaskAfterAttempt {
  const { failures, losses } = task;
  const same = { failures, losses, notBefore: null, resultAttempt: task.resultAttempt };
  switch (end.outcome) {
    case "succeeded":
      return { ...same, state: "succeeded", resultAttempt: end.number, note: "succeeded" };
    case "cancelled":
      return { ...same, state: "cancelled", note: "cancelled" };
    case "failed":
    case "timed_out": {
      const failed = failures + 1;
      const what = end.outcome === "timed_out" ? "timed out" : "failed";
      if (failed >= retry.maxAttempts) {
        return {
          ...same,
          failures: failed,
          state: "failed",
          note: `${what} (${failed} of ${retry.maxAttempts} attempts used)${end.reason ? `: ${end.reason}` : ""}`,
        };
      }
      const delay = retryDelayMs(retry.backoffSeconds, failed, random);
      return {
        ...same,
        failures: failed,
        state: "pending",
        notBefore: delay > 0 ? now + delay : null,
        note: `${what}; retry ${failed + 1} of ${retry.maxAttempts} in ${(delay / 1000).toFixed(1)} s`,
      };
    }
    case "lost": {
      const lost = losses + 1;
      if (lost >= POISON_LOSS_LIMIT) {
        return { ...same, losses: lost, state: "failed", note: `poison task: lost ${lost} times` };
      }
      return {
        ...same,
        losses: lost,
        state: "pending",
        note: `lost${end.reason ? ` (${end.reason})` : ""}; restarting`,
      };
    }
    case "preempted":
    case "migrated":
      return { ...same, state: "pending", note: `${end.outcome}; restarting` };
  }
}
