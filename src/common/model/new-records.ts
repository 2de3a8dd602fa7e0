// Fresh records, made in one place so that a field added to a record is given its first value once.

import type { AttemptRecord, TaskRecord } from "./records.ts";
import type { TaskState } from "./states.ts";

/** A task as it is submitted: no attempt yet. */
export function newTask(jobId: string, index: number, state: TaskState): TaskRecord {
  return {
    jobId,
    index,
    state,
    attempts: 0,
    failures: 0,
    losses: 0,
    systemFailures: 0,
    notBefore: null,
    resultAttempt: null,
    checkpoint: null,
    migration: null,
    memoryMb: null,
  };
}

/** Whether `task` is task `index` of job `jobId` as newTask made it in `state`, untouched since. */
export function isNewTask(task: TaskRecord, jobId: string, index: number, state: TaskState): boolean {
  return (
    task.jobId === jobId &&
    task.index === index &&
    task.state === state &&
    task.attempts === 0 &&
    task.failures === 0 &&
    task.losses === 0 &&
    task.systemFailures === 0 &&
    task.notBefore === null &&
    task.resultAttempt === null &&
    task.checkpoint === null &&
    task.migration === null &&
    task.memoryMb === null
  );
}

/**
 * The task's next attempt on one host (or a gang's hosts, rank 0 first), starting now; the caller
 * has counted it in `task.attempts`. It restarts from the task's last checkpoint when there is one.
 */
export function newAttempt(task: TaskRecord, hosts: string | readonly string[], now: number): AttemptRecord {
  const ranks = typeof hosts === "string" ? [hosts] : hosts;
  return {
    jobId: task.jobId,
    taskIndex: task.index,
    number: task.attempts,
    host: ranks[0],
    placement: ranks.map((host, rank) => ({ host, rank })),
    state: "starting",
    outcome: null,
    reason: null,
    exitCode: null,
    restarted: task.checkpoint !== null,
    startedAt: now,
    endedAt: null,
    stop: null,
    memoryMb: task.memoryMb,
    usage: null,
  };
}
