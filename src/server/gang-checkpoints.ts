// Coordinated checkpoints of multi-node jobs: each rank commits its folder under the generation
// the job declared (the same on every rank for one coordinated state). A generation counts for the
// gang only once every rank has committed it; a restart restores every rank to the newest complete
// one. Each rank keeps its manifests from the newest complete generation on; older ones, and
// objects no kept manifest names, go.

import { Readable } from "node:stream";
import { type CheckpointManifest, readCheckpointManifest } from "../protocol/messages.ts";
import { checkpointObjectKey, checkpointPrefix, gangManifestKey } from "../store/blob-layout.ts";
import type { BlobStore } from "../store/blobs.ts";

/** The newest generation every one of `ranks` ranks has committed, or null. Pure. */
export function newestCompleteGeneration(
  committed: ReadonlyMap<number, ReadonlySet<number>>,
  ranks: number,
): number | null {
  const first = committed.get(0);
  if (!first) return null;
  let best: number | null = null;
  for (const generation of first) {
    let everywhere = true;
    for (let rank = 1; rank < ranks && everywhere; rank++)
      everywhere = committed.get(rank)?.has(generation) ?? false;
    if (everywhere && (best === null || generation > best)) best = generation;
  }
  return best;
}

/** Which generations each rank of the task has committed, from the manifests kept. */
export async function committedGenerations(
  blobs: BlobStore,
  jobId: string,
  task: number,
): Promise<Map<number, Set<number>>> {
  const committed = new Map<number, Set<number>>();
  const prefix = `${checkpointPrefix(jobId, task)}/ranks/`;
  for (const blob of await blobs.list(`${checkpointPrefix(jobId, task)}/ranks`)) {
    const match = /^(\d+)\/manifests\/(\d+)\.json$/.exec(blob.key.slice(prefix.length));
    if (!match) continue;
    const rank = Number(match[1]);
    const set = committed.get(rank) ?? new Set<number>();
    committed.set(rank, set);
    set.add(Number(match[2]));
  }
  return committed;
}

export async function writeRankManifest(
  blobs: BlobStore,
  jobId: string,
  task: number,
  manifest: CheckpointManifest & { gang: { rank: number; generation: number } },
): Promise<void> {
  const { rank, generation } = manifest.gang;
  await blobs.write(
    gangManifestKey(jobId, task, rank, generation),
    Readable.from([JSON.stringify(manifest)]),
  );
}

export async function readRankManifest(
  blobs: BlobStore,
  jobId: string,
  task: number,
  rank: number,
  generation: number,
): Promise<CheckpointManifest | null> {
  const key = gangManifestKey(jobId, task, rank, generation);
  if (!(await blobs.stat(key))) return null;
  const chunks: Buffer[] = [];
  for await (const chunk of blobs.read(key)) chunks.push(chunk as Buffer);
  // Checked again as it is read: a store written before paths were checked, or tampered with, must
  // not hand an agent a path out of its folder.
  return readCheckpointManifest(JSON.parse(Buffer.concat(chunks).toString("utf8")));
}

/** Drops each rank's manifests older than the complete generation, and objects no kept manifest names. */
export async function dropOldGangCheckpoints(
  blobs: BlobStore,
  jobId: string,
  task: number,
  complete: number,
): Promise<void> {
  const named = new Set<string>();
  for (const [rank, generations] of await committedGenerations(blobs, jobId, task)) {
    for (const generation of generations) {
      if (generation < complete) {
        await blobs.deletePrefix(gangManifestKey(jobId, task, rank, generation));
        continue;
      }
      const manifest = await readRankManifest(blobs, jobId, task, rank, generation);
      for (const file of manifest?.files ?? []) named.add(checkpointObjectKey(jobId, task, file.sha256));
    }
  }
  for (const blob of await blobs.list(`${checkpointPrefix(jobId, task)}/objects`)) {
    if (!named.has(blob.key)) await blobs.deletePrefix(blob.key);
  }
}
