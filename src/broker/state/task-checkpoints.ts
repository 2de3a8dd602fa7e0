// A task's checkpoints as the server knows them: the committed parts it keeps (records, in the
// store too) and the objects uploaded since the ranks that sent them last committed (in memory:
// a commit of theirs may name them next). Which generation is complete, which parts and objects
// go, is decided from this alone (handlers/checkpoints.ts), never from a listing of blobs.

import type { CheckpointFile, CheckpointPart } from "../../common/model/records.ts";
import type { JobEntry } from "./job-entry.ts";

/** An object stored for the task and not yet named by a commit of each rank that sent it. */
export interface PendingObject {
  bytes: number;
  /** The ranks whose next commit may name it (those the uploading host runs). */
  ranks: Set<number>;
}

export class TaskCheckpoints {
  /** The committed parts kept, in no particular order. */
  parts: CheckpointPart[] = [];
  /** Objects uploaded and not yet named by a commit of each rank that sent them, by SHA-256. */
  readonly pending = new Map<string, PendingObject>();
  /** Objects being deleted (decided, not yet done): an upload of one meanwhile must be sent again. */
  readonly dropping = new Set<string>();

  part(rank: number, generation: number): CheckpointPart | undefined {
    return this.parts.find((part) => part.rank === rank && part.generation === generation);
  }

  /** The stored objects a commit may name, with their sizes: those of the kept parts and the pending ones. */
  storedObjects(): Map<string, number> {
    const objects = new Map<string, number>();
    for (const part of this.parts) for (const file of part.files) objects.set(file.sha256, file.bytes);
    for (const [sha, object] of this.pending) objects.set(sha, object.bytes);
    for (const sha of this.dropping) objects.delete(sha);
    return objects;
  }
}

/**
 * The manifest a restarted attempt gets: the part of the task's restart generation (a multi-node
 * job's rank's when `rank` is given, with the rank and generation), or null when there is none.
 */
export function restartManifest(
  job: JobEntry,
  taskIndex: number,
  rank?: number,
): { files: CheckpointFile[]; gang?: { rank: number; generation: number } } | null {
  const generation = job.tasks[taskIndex]?.checkpoint?.generation;
  if (generation === undefined) return null;
  const part = job.checkpointsOf(taskIndex).part(rank ?? 0, generation);
  if (!part) return null;
  const files = part.files.map(({ path, sha256, bytes }) => ({ path, sha256, bytes }));
  return rank === undefined ? { files } : { files, gang: { rank, generation } };
}
