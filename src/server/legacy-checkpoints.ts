// Checkpoints of a store of an earlier version: their manifests are blobs only (a single-host
// task's at checkpoint/manifests/G.json, a multi-node job's rank's at checkpoint/ranks/R/manifests/
// G.json), with no part records. At start, each live task that has a restart point and no part
// recorded gets its parts from those blobs, read once and then committed as records, so that a
// restart finds the checkpoint and retention knows what it keeps. A store written since has a
// part for every restart point: there this reads nothing.

import { text } from "node:stream/consumers";
import type { CheckpointPart } from "../model/records.ts";
import { readCheckpointManifest } from "../protocol/messages.ts";
import type { BlobStore } from "../store/blobs.ts";
import type { StoreSnapshot } from "../store/store.ts";
import { checkpointPrefix } from "./blob-keys.ts";

const SINGLE = /^manifests\/(\d+)\.json$/;
const RANK = /^ranks\/(\d+)\/manifests\/(\d+)\.json$/;

export async function legacyCheckpointParts(
  snapshot: StoreSnapshot,
  blobs: BlobStore,
): Promise<CheckpointPart[]> {
  const recorded = new Set(snapshot.checkpointParts.map((part) => `${part.jobId}\0${part.taskIndex}`));
  const found: CheckpointPart[] = [];
  for (const task of snapshot.tasks) {
    const checkpoint = task.checkpoint;
    if (checkpoint === null || recorded.has(`${task.jobId}\0${task.index}`)) continue;
    const prefix = checkpointPrefix(task.jobId, task.index);
    for (const blob of await blobs.list(prefix)) {
      const name = blob.key.slice(prefix.length + 1);
      const single = SINGLE.exec(name);
      const ranked = RANK.exec(name);
      // A single-host task's older manifests were dropped as each new one committed; one newer
      // than its restart point was written by a commit that never finished.
      if (single && Number(single[1]) !== checkpoint.generation) continue;
      if (!single && !ranked) continue;
      let manifest: ReturnType<typeof readCheckpointManifest>;
      try {
        manifest = readCheckpointManifest(JSON.parse(await text(blobs.read(blob.key))));
      } catch {
        // Unreadable or refused (a path that could leave its folder): not a state to restore.
        continue;
      }
      const files = manifest.files.map(({ path, sha256, bytes }) => ({ path, sha256, bytes }));
      found.push({
        jobId: task.jobId,
        taskIndex: task.index,
        rank: ranked ? Number(ranked[1]) : 0,
        generation: ranked ? Number(ranked[2]) : checkpoint.generation,
        attempt: Math.max(1, task.attempts),
        files,
        bytes: files.reduce((sum, file) => sum + file.bytes, 0),
        at: checkpoint.at,
      });
    }
  }
  return found;
}
