// Checkpoints as state. The agent routes store the bytes (objects named by their SHA-256) and hand
// over what arrived; here a committed manifest becomes a part of the task's checkpoint (fencing, as
// for results), the generation the task restarts from is decided (a multi-node job's once every
// rank has its part), and what is no longer kept is dropped: part records in the same commit,
// their blobs as an effect once it is durable (state/checkpoint-retention.ts).

import { nodesOf } from "../../../common/model/job-spec.ts";
import type { CheckpointPart } from "../../../common/model/records.ts";
import type { CheckpointManifest } from "../../../common/protocol/messages.ts";
import { newestCompleteGeneration, retention } from "../../state/checkpoint-retention.ts";
import type { CheckpointBlobDrop } from "../effects.ts";
import { ConflictError, InvalidRequestError } from "../errors.ts";
import type { Step } from "../step.ts";
import { findJob } from "./control.ts";

export interface CheckpointObjectStored {
  jobId: string;
  taskIndex: number;
  /** The ranks the uploading host runs of the attempt: a commit of any of them may name the object. */
  ranks: readonly number[];
  sha256: string;
  bytes: number;
}

/**
 * An object of a task's checkpoint is stored. It stays until each rank that may name it has
 * committed since (then it is kept if a kept part names it). One being deleted must be sent again.
 */
export function checkpointObjectStored(step: Step, stored: CheckpointObjectStored): void {
  const job = step.state.jobs.get(stored.jobId);
  if (!job?.tasks[stored.taskIndex]) return;
  const checkpoints = job.checkpointsOf(stored.taskIndex);
  if (checkpoints.dropping.has(stored.sha256)) {
    throw new ConflictError(`checkpoint object ${stored.sha256} was being dropped: upload it again`);
  }
  const pending = checkpoints.pending.get(stored.sha256);
  if (pending) {
    const ranks = new Set(pending.ranks);
    step.onRollback(() => {
      pending.ranks = ranks;
    });
    for (const rank of stored.ranks) pending.ranks.add(rank);
  } else {
    step.onRollback(() => checkpoints.pending.delete(stored.sha256));
    checkpoints.pending.set(stored.sha256, { bytes: stored.bytes, ranks: new Set(stored.ranks) });
  }
}

export interface CheckpointCommit {
  jobId: string;
  taskIndex: number;
  attempt: number;
  manifest: CheckpointManifest;
}

export interface CheckpointCommitted {
  /** The generation committed (a multi-node job's rank: the one it declared). */
  generation: number;
  /** The bytes of the manifest's files. */
  bytes: number;
  /** The generation the task restarted from before, or null. */
  previous: number | null;
}

/**
 * A live attempt commits a manifest whose objects are all stored. A single-host task's becomes
 * its next generation and restart point; a multi-node job's rank's is its part of the generation
 * it declares, and the newest generation every rank has becomes the restart point.
 */
export function commitCheckpoint(step: Step, commit: CheckpointCommit): CheckpointCommitted {
  const { jobId, taskIndex, attempt, manifest } = commit;
  const job = findJob(step, jobId);
  const task = job.tasks[taskIndex];
  if (!task || !step.state.liveAttempt(jobId, taskIndex, attempt)) {
    throw new ConflictError(`attempt ${attempt} of task ${taskIndex} is not current: checkpoint ignored`);
  }
  const ranks = nodesOf(job.record.spec);
  const multiNode = manifest.gang !== undefined || ranks > 1;
  if (multiNode && (!manifest.gang || manifest.gang.rank >= ranks)) {
    throw new InvalidRequestError("gang", "a multi-node job's checkpoint names its rank and generation");
  }
  const checkpoints = job.checkpointsOf(taskIndex);
  const stored = checkpoints.storedObjects();
  let bytes = 0;
  for (const file of manifest.files) {
    if (stored.get(file.sha256) !== file.bytes) {
      throw new ConflictError(`checkpoint object for ${file.path} is missing: upload it first`);
    }
    bytes += file.bytes;
  }
  const previous = task.checkpoint?.generation ?? null;
  const rank = manifest.gang?.rank ?? 0;
  const generation = manifest.gang?.generation ?? (previous ?? 0) + 1;
  const part: CheckpointPart = {
    jobId,
    taskIndex,
    rank,
    generation,
    attempt,
    files: manifest.files.map(({ path, sha256, bytes }) => ({ path, sha256, bytes })),
    bytes,
    at: step.now,
  };
  const keyOf = (each: CheckpointPart) => `${each.rank}/${each.generation}`;
  const parts = [...checkpoints.parts.filter((each) => keyOf(each) !== keyOf(part)), part];
  const complete = multiNode ? newestCompleteGeneration(parts, ranks) : generation;
  if (complete !== null && (previous === null || complete > previous)) {
    let total = 0;
    for (const each of parts) if (each.generation === complete) total += each.bytes;
    step.write.setCheckpoint(job, task, { generation: complete, bytes: total, at: step.now });
  }
  const kept = retention(parts, checkpoints.pending, rank, task.checkpoint?.generation ?? null);
  step.write.keepCheckpointParts(job, taskIndex, kept.keep, part);
  const pending = new Map(checkpoints.pending);
  const dropping = new Set(checkpoints.dropping);
  step.onRollback(() => {
    checkpoints.pending.clear();
    for (const [sha, object] of pending) checkpoints.pending.set(sha, object);
    checkpoints.dropping.clear();
    for (const sha of dropping) checkpoints.dropping.add(sha);
  });
  checkpoints.pending.clear();
  for (const [sha, object] of kept.pending) checkpoints.pending.set(sha, object);
  if (kept.drop.length > 0 || kept.dropObjects.length > 0) {
    for (const sha of kept.dropObjects) checkpoints.dropping.add(sha);
    const drop: CheckpointBlobDrop = {
      jobId,
      taskIndex,
      objects: kept.dropObjects,
      manifests: kept.drop.map((each) => ({
        rank: multiNode ? each.rank : null,
        generation: each.generation,
      })),
    };
    step.effect({ kind: "dropCheckpointBlobs", drop });
  }
  return { generation, bytes, previous };
}

/**
 * Checkpoint parts of a store of an earlier version, read from its manifest blobs at start
 * (server/legacy-checkpoints.ts): recorded once, as the parts they are.
 */
export function recordLegacyParts(step: Step, parts: readonly CheckpointPart[]): void {
  step.write.addCheckpointParts(parts);
}

/** The blobs of a drop are deleted (or failed to be): their objects may be uploaded again. */
export function checkpointBlobsDropped(step: Step, drop: CheckpointBlobDrop): void {
  const job = step.state.jobs.get(drop.jobId);
  if (!job) return;
  const checkpoints = job.checkpointsOf(drop.taskIndex);
  for (const sha of drop.objects) checkpoints.dropping.delete(sha);
}
