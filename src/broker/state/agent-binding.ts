// What an agent's host may touch of other people's jobs: only the attempts placed on it. A host
// reads the inputs and checkpoint of its live attempts, and writes outputs, logs and checkpoints of
// attempts it runs (rank by rank for a multi-node attempt). Everything the file routes and the
// log messages accept is decided from here, so a joined host cannot reach another host's work.

import type { AttemptRecord } from "../../common/model/records.ts";
import type { ClusterState } from "./cluster-state.ts";

/** The ranks `host` runs of an attempt: [0] for a single-host attempt on it, none when it is elsewhere. */
function ranksOnHost(attempt: Pick<AttemptRecord, "host" | "placement">, host: string): number[] {
  if (attempt.placement.length === 0) return attempt.host === host ? [0] : [];
  return attempt.placement.filter((entry) => entry.host === host).map((entry) => entry.rank);
}

/**
 * The ranks `host` runs of one attempt still in memory, live or ended (an ended attempt's own host
 * still sends the tail of its log, and hears 409 rather than 404 for a late upload).
 */
export function attemptRanksOn(
  state: ClusterState,
  host: string,
  jobId: string,
  taskIndex: number,
  number: number,
): number[] {
  const attempt = state.jobs.get(jobId)?.attempt(taskIndex, number);
  return attempt ? ranksOnHost(attempt, host) : [];
}

/**
 * The ranks `host` runs of the live attempts of a job (of one task when `taskIndex` is given):
 * what it may read of that job. None: the host has no business with the job's files.
 */
export function liveRanksOn(state: ClusterState, host: string, jobId: string, taskIndex?: number): number[] {
  const job = state.jobs.get(jobId);
  if (!job) return [];
  const live = taskIndex === undefined ? job.allLiveAttempts() : job.liveAttempts(taskIndex);
  const ranks = new Set<number>();
  for (const attempt of live) for (const rank of ranksOnHost(attempt, host)) ranks.add(rank);
  return [...ranks];
}
