// A job's state follows from its tasks, whether it is held, and whether its dependencies are met.

import type { JobState, TaskState } from "./states.ts";

export interface TaskCounts {
  pending: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

export function emptyCounts(): TaskCounts {
  return { pending: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
}

/** Tasks are counted in one of the five buckets; a held or waiting task counts as pending. */
export function countBucket(state: TaskState): keyof TaskCounts {
  return state === "held" || state === "waiting" ? "pending" : state;
}

export interface JobStateInput {
  counts: TaskCounts;
  held: boolean;
  dependenciesMet: boolean;
}

export function deriveJobState({ counts, held, dependenciesMet }: JobStateInput): JobState {
  const total = counts.pending + counts.running + counts.succeeded + counts.failed + counts.cancelled;
  const ended = counts.succeeded + counts.failed + counts.cancelled;
  if (ended === total) {
    if (counts.failed > 0) return "failed";
    if (counts.cancelled > 0) return "cancelled";
    return "succeeded";
  }
  if (counts.running > 0) return "running";
  if (held) return "held";
  if (!dependenciesMet) return "waiting";
  return "pending";
}
