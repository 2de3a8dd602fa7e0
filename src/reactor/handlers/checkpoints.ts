// A checkpoint uploaded by a live attempt becomes its task's restart point (fencing, as for results).

import { ConflictError } from "../errors.ts";
import type { Step } from "../step.ts";
import { findJob } from "./control.ts";

export interface CheckpointCommit {
  jobId: string;
  taskIndex: number;
  attempt: number;
  generation: number;
  bytes: number;
}

/** Returns the previous generation, or null. */
export function commitCheckpoint(step: Step, commit: CheckpointCommit): number | null {
  const job = findJob(step, commit.jobId);
  const task = job.tasks[commit.taskIndex];
  if (!task || !step.state.liveAttempt(commit.jobId, commit.taskIndex, commit.attempt)) {
    throw new ConflictError(
      `attempt ${commit.attempt} of task ${commit.taskIndex} is not current: checkpoint ignored`,
    );
  }
  const previous = task.checkpoint?.generation ?? null;
  if (previous !== null && commit.generation <= previous) {
    throw new ConflictError(`checkpoint generation ${commit.generation} is not after ${previous}`);
  }
  task.checkpoint = { generation: commit.generation, bytes: commit.bytes, at: step.now };
  job.checkpointCommitted();
  step.change({ op: "putTasks", tasks: [task] });
  return previous;
}
