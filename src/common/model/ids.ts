// Identities shared by the server's parts. An attempt is named by (job, task, number): fencing is
// by that identity, so several live attempts of one task (replicas) each keep their own.

import type { AttemptRecord } from "./records.ts";

export function attemptKey(jobId: string, taskIndex: number, number: number): string {
  return `${jobId}/${taskIndex}/${number}`;
}

export function keyOf(attempt: Pick<AttemptRecord, "jobId" | "taskIndex" | "number">): string {
  return attemptKey(attempt.jobId, attempt.taskIndex, attempt.number);
}

/** A live attempt holds its placement and may still report: anything not ended. */
export function isLive(attempt: Pick<AttemptRecord, "state">): boolean {
  return attempt.state !== "ended";
}

/** The hosts an attempt occupies, rank 0 first. */
export function hostsOf(attempt: Pick<AttemptRecord, "host" | "placement">): string[] {
  return attempt.placement.length > 0 ? attempt.placement.map((entry) => entry.host) : [attempt.host];
}
