// The checkpoint a restarted attempt starts from: the part of its task's restart generation, read
// from the job's checkpoints (task-checkpoints.ts).

import type { RestartManifest } from "../../common/model/records.ts";
import type { JobEntry } from "./job-entry.ts";

/**
 * The manifest a restarted attempt gets: the part of the task's restart generation (a multi-node
 * job's rank's when `rank` is given, with the rank and generation), or null when there is none.
 */
export function restartManifest(job: JobEntry, taskIndex: number, rank?: number): RestartManifest | null {
  const generation = job.tasks[taskIndex]?.checkpoint?.generation;
  if (generation === undefined) return null;
  const part = job.checkpointsOf(taskIndex).part(rank ?? 0, generation);
  if (!part) return null;
  const files = part.files.map(({ path, sha256, bytes }) => ({ path, sha256, bytes }));
  return rank === undefined ? { files } : { files, gang: { rank, generation } };
}
