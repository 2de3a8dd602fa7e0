// Replicas (OurGrid's MyGrid, workqueue with replication): a task of a job with `replicas: k` may
// run as up to k attempts at once on different hosts; the first to succeed wins. These are the
// pure rules of what an attempt's end does to its task while other replicas of it still run, and
// of when a task may have one more replica.

import type { EndCause } from "./end-cause.ts";
import type { TaskNext } from "./events.ts";
import type { TaskRecord } from "./records.ts";
import type { AttemptOutcome } from "./states.ts";
import type { RetryPolicy } from "./task-outcome.ts";
import { POISON_LOSS_LIMIT, SYSTEM_FAILURE_LIMIT } from "./task-outcome.ts";

type Counters = Pick<TaskRecord, "failures" | "losses" | "systemFailures">;

export interface ReplicaEnd {
  outcome: AttemptOutcome;
  reason: string | null;
  /** For `lost`: whose failure it was (default: the host's). */
  cause?: EndCause;
}

export interface TaskAfterReplicaEnd extends Counters {
  /** What happened, for the job's event history (model/events.ts renders it). */
  next: Extract<TaskNext, { is: "replicasRunning" }>;
}

/**
 * An attempt that ends short of success while `othersRunning` replicas of its task are still live
 * leaves the task running: as in MyGrid, a failed replica is counted against the task (failures
 * use the retry budget, host losses count toward the poison limit, system failures toward theirs),
 * but the task fails or goes round again only when its last live attempt ends (taskAfterAttempt).
 * Counting them is what keeps a host that fails every replica from being given new ones forever
 * (mayAddReplica). Stops (cancelled, preempted, migrated) count for nothing.
 */
export function taskAfterReplicaEnd(
  task: Counters,
  end: ReplicaEnd,
  retry: RetryPolicy,
  othersRunning: number,
): TaskAfterReplicaEnd {
  const same = { failures: task.failures, losses: task.losses, systemFailures: task.systemFailures };
  const next = (failures: number) =>
    ({ is: "replicasRunning", others: othersRunning, failures, maxAttempts: retry.maxAttempts }) as const;
  switch (end.outcome) {
    case "failed":
    case "timed_out": {
      const failures = task.failures + 1;
      return { ...same, failures, next: next(failures) };
    }
    case "lost":
      if (end.cause !== undefined && end.cause !== "host") {
        return { ...same, systemFailures: task.systemFailures + 1, next: next(same.failures) };
      }
      return { ...same, losses: task.losses + 1, next: next(same.failures) };
    case "succeeded":
    case "cancelled":
    case "preempted":
    case "migrated":
      return { ...same, next: next(same.failures) };
  }
}

/**
 * Whether a running task may have one more replica: fewer than k live attempts, and budget left,
 * so that a failing replica is not replaced once the task could no longer survive its failure.
 */
export function mayAddReplica(
  task: Counters,
  liveAttempts: number,
  replicas: number,
  retry: RetryPolicy,
): boolean {
  return (
    liveAttempts < replicas &&
    task.failures < retry.maxAttempts &&
    task.losses < POISON_LOSS_LIMIT &&
    task.systemFailures < SYSTEM_FAILURE_LIMIT
  );
}
