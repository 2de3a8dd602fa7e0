// What happens to a task when one of its attempts ends (guarantee 5: failures are told apart).

import type { TaskNext } from "./events.ts";
import type { TaskRecord } from "./records.ts";
import type { AttemptOutcome, TaskState } from "./states.ts";

/** A task lost this many times is failed as a poison task (README, "What survives what": failures are told apart). */
export const POISON_LOSS_LIMIT = 5;
/** A task whose inputs could not be staged (or whose start never arrived) this many times is failed. */
export const SYSTEM_FAILURE_LIMIT = 5;
/** Back-off base after a system failure, when the job's own retry back-off is shorter. */
export const SYSTEM_FAILURE_BACKOFF_SECONDS = 1;
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
  /** Why the task ended or goes round again, for the job's event history (model/events.ts renders it). */
  next: TaskNext;
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
      return { ...same, state: "succeeded", resultAttempt: end.number, next: { is: "succeeded" } };
    case "cancelled":
      return { ...same, state: "cancelled", next: { is: "cancelled" } };
    case "failed":
    case "timed_out": {
      const failed = failures + 1;
      if (failed >= retry.maxAttempts) {
        return {
          ...same,
          failures: failed,
          state: "failed",
          next: { is: "failed", failures: failed, maxAttempts: retry.maxAttempts },
        };
      }
      const delay = retryDelayMs(retry.backoffSeconds, failed, random);
      return {
        ...same,
        failures: failed,
        state: "pending",
        notBefore: delay > 0 ? now + delay : null,
        next: { is: "retry", failures: failed, maxAttempts: retry.maxAttempts, delayMs: delay },
      };
    }
    case "lost": {
      const lost = losses + 1;
      if (lost >= POISON_LOSS_LIMIT) {
        return { ...same, losses: lost, state: "failed", next: { is: "poison", losses: lost } };
      }
      return {
        ...same,
        losses: lost,
        state: "pending",
        next: { is: "restart" },
      };
    }
    case "preempted":
    case "migrated":
      return { ...same, state: "pending", next: { is: "restart" } };
  }
}

export interface MemoryGrowth {
  memoryGrowth?: number;
  maxMemoryMb?: number;
}

/**
 * The memory a task's next attempt takes after one of `currentMb` was killed for its memory limit:
 * `currentMb` times retry.memoryGrowth (whole MB, up), no more than retry.maxMemoryMb. Null when it
 * does not grow: no memoryGrowth, no limit to grow, or the cap reached already.
 */
export function grownMemoryMb(currentMb: number, retry: MemoryGrowth): number | null {
  if (retry.memoryGrowth === undefined || currentMb <= 0) return null;
  const grown = Math.min(
    Math.ceil(currentMb * retry.memoryGrowth),
    retry.maxMemoryMb ?? Number.POSITIVE_INFINITY,
  );
  return grown > currentMb ? grown : null;
}

export interface TaskAfterSystemFailure extends TaskAfterAttempt {
  systemFailures: number;
}

/**
 * A system failure does not use the retry budget nor count as a host loss; the task goes round
 * again after a back-off, and fails once it has had SYSTEM_FAILURE_LIMIT of them.
 */
export function taskAfterSystemFailure(
  task: Pick<TaskRecord, "failures" | "losses" | "resultAttempt" | "systemFailures">,
  retry: RetryPolicy,
  now: number,
  random: number,
): TaskAfterSystemFailure {
  const systemFailures = task.systemFailures + 1;
  const same = { failures: task.failures, losses: task.losses, resultAttempt: task.resultAttempt };
  if (systemFailures >= SYSTEM_FAILURE_LIMIT) {
    return {
      ...same,
      systemFailures,
      notBefore: null,
      state: "failed",
      next: { is: "systemFailed", systemFailures },
    };
  }
  const base = Math.max(retry.backoffSeconds, SYSTEM_FAILURE_BACKOFF_SECONDS);
  const delay = retryDelayMs(base, systemFailures, random);
  return {
    ...same,
    systemFailures,
    state: "pending",
    notBefore: now + delay,
    next: { is: "systemRetry", delayMs: delay },
  };
}
