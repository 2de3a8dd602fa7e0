// How the agent names an attempt: its folder under the work folder, its key among the attempts it
// holds (a multi-node attempt's ranks each have their own), and the reference reports carry.

import type { StartMessage } from "../../common/protocol/messages.ts";

/** An attempt's folder under the agent's `attempts` folder. */
export function attemptDirName(jobId: string, taskIndex: number, attempt: number, rank?: number): string {
  return rank === undefined
    ? `${jobId}.${taskIndex}.${attempt}`
    : `${jobId}.${taskIndex}.${attempt}.rank${rank}`;
}

/** An attempt's key on the agent: a multi-node attempt's ranks each have their own. */
export function attemptKeyOf(ref: {
  jobId: string;
  taskIndex: number;
  attempt: number;
  rank?: number;
}): string {
  const key = `${ref.jobId}/${ref.taskIndex}/${ref.attempt}`;
  return ref.rank === undefined ? key : `${key}#${ref.rank}`;
}

/** How reports and log messages name an attempt (by its start): its job, task and number, and a gang's rank. */
export function attemptRef(spec: Pick<StartMessage, "jobId" | "taskIndex" | "attempt" | "gang">): {
  jobId: string;
  taskIndex: number;
  attempt: number;
  rank?: number;
} {
  const { jobId, taskIndex, attempt: number, gang } = spec;
  return { jobId, taskIndex, attempt: number, ...(gang ? { rank: gang.rank } : {}) };
}
