// Checkpoints of a store of an earlier version: their manifests are blobs only (a single-host
// task's at checkpoint/manifests/G.json, a multi-node job's rank's at checkpoint/ranks/R/manifests/
// G.json), with no part records. At start, each live task that has a restart point and no part
// recorded gets its parts from those blobs, read once and then committed as records, so that a
// restart finds the checkpoint and retention knows what it keeps; objects no manifest names (a
// checkpoint never committed) are handed over as uploads, which the ranks' next commits drop. A
// store written since has a part for every restart point: there this reads nothing.

import { text } from "node:stream/consumers";
import { nodesOf } from "../../common/model/job-spec.ts";
import type { CheckpointFile, CheckpointPart } from "../../common/model/records.ts";
import { checkpointPrefix } from "../store/blob-layout.ts";
import type { BlobStore } from "../store/blobs.ts";
import type { StoreSnapshot } from "../store/store.ts";

const SINGLE = /^manifests\/(\d+)\.json$/;
const RANK = /^ranks\/(\d+)\/manifests\/(\d+)\.json$/;
const OBJECT = /^objects\/([0-9a-f]{64})$/;

/** An object of an earlier version's checkpoint that no manifest names: pending for every rank. */
export interface LegacyObject {
  jobId: string;
  taskIndex: number;
  ranks: number[];
  sha256: string;
  bytes: number;
}

export async function legacyCheckpoints(
  snapshot: StoreSnapshot,
  blobs: BlobStore,
): Promise<{ parts: CheckpointPart[]; unnamed: LegacyObject[] }> {
  const recorded = new Set(snapshot.checkpointParts.map((part) => `${part.jobId}\0${part.taskIndex}`));
  const found: CheckpointPart[] = [];
  const unnamed: LegacyObject[] = [];
  const jobs = new Map(snapshot.jobs.map((job) => [job.id, job]));
  for (const task of snapshot.tasks) {
    const checkpoint = task.checkpoint;
    if (checkpoint === null || recorded.has(`${task.jobId}\0${task.index}`)) continue;
    const prefix = checkpointPrefix(task.jobId, task.index);
    const objects = new Map<string, number>();
    const named = new Set<string>();
    for (const blob of await blobs.list(prefix)) {
      const name = blob.key.slice(prefix.length + 1);
      const object = OBJECT.exec(name);
      if (object) objects.set(object[1], blob.bytes);
      const single = SINGLE.exec(name);
      const ranked = RANK.exec(name);
      // A single-host task's older manifests were dropped as each new one committed; one newer
      // than its restart point was written by a commit that never finished.
      if (single && Number(single[1]) !== checkpoint.generation) continue;
      if (!single && !ranked) continue;
      const rank = ranked ? Number(ranked[1]) : 0;
      const generation = ranked ? Number(ranked[2]) : checkpoint.generation;
      if (!Number.isSafeInteger(rank) || !Number.isSafeInteger(generation) || generation < 1) continue;
      const files = await legacyFiles(blobs, blob.key);
      if (files === null) continue;
      for (const file of files) named.add(file.sha256);
      found.push({
        jobId: task.jobId,
        taskIndex: task.index,
        rank,
        generation,
        attempt: Math.max(1, task.attempts),
        files,
        bytes: files.reduce((sum, file) => sum + file.bytes, 0),
        at: checkpoint.at,
      });
    }
    const spec = jobs.get(task.jobId)?.spec;
    const ranks = Array.from({ length: spec ? nodesOf(spec) : 1 }, (_, rank) => rank);
    for (const [sha256, bytes] of objects)
      if (!named.has(sha256))
        unnamed.push({ jobId: task.jobId, taskIndex: task.index, ranks, sha256, bytes });
  }
  return { parts: found, unnamed };
}

/**
 * A manifest's files as that version stored them, or null when it is not one (not JSON, a field
 * missing). The paths are not checked here: the restart that hands the manifest out checks them,
 * so one written before paths were checked fails that restart, naming the path, as it did.
 */
async function legacyFiles(blobs: BlobStore, key: string): Promise<CheckpointFile[] | null> {
  let value: unknown;
  try {
    value = JSON.parse(await text(blobs.read(key)));
  } catch {
    return null;
  }
  const listed = (value as { files?: unknown } | null)?.files;
  if (!Array.isArray(listed)) return null;
  const files: CheckpointFile[] = [];
  for (const each of listed as { path?: unknown; sha256?: unknown; bytes?: unknown }[]) {
    const { path, sha256, bytes } = each ?? {};
    if (typeof path !== "string" || typeof sha256 !== "string") return null;
    if (typeof bytes !== "number" || !Number.isSafeInteger(bytes) || bytes < 0) return null;
    files.push({ path, sha256, bytes });
  }
  return files;
}
