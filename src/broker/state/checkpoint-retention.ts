// Which checkpoint generation a task restarts from, and what is kept. A multi-node job's ranks
// each commit their part of a generation the job declared (the same on every rank for one
// coordinated state); a generation counts once every rank has its part, and a restart takes every
// rank back to the newest complete one. A single-host task's generations are rank 0's, each
// complete at once. Parts from the restart generation on are kept, older ones go; an object goes
// once no kept part names it and no rank that uploaded it may still name it. Pure.

import type { CheckpointPart } from "../../common/model/records.ts";
import type { PendingObject } from "./task-checkpoints.ts";

/** The newest generation every one of `ranks` ranks has a part of, or null. */
export function newestCompleteGeneration(
  parts: readonly Pick<CheckpointPart, "rank" | "generation">[],
  ranks: number,
): number | null {
  const byGeneration = new Map<number, Set<number>>();
  for (const part of parts) {
    if (part.rank >= ranks) continue;
    const set = byGeneration.get(part.generation) ?? new Set<number>();
    byGeneration.set(part.generation, set);
    set.add(part.rank);
  }
  let best: number | null = null;
  for (const [generation, present] of byGeneration)
    if (present.size === ranks && (best === null || generation > best)) best = generation;
  return best;
}

export interface Retention {
  keep: CheckpointPart[];
  drop: CheckpointPart[];
  /** Objects still pending for a rank that has not committed since it sent them. */
  pending: Map<string, PendingObject>;
  /** Objects no kept part names and no rank may name any more: to delete, by SHA-256. */
  dropObjects: string[];
}

/**
 * What is kept after `rank` committed, the task restarting from `restartFrom` (null: no complete
 * generation yet, every part is kept): parts of that generation and newer stay; the objects `rank`
 * sent are no longer pending for it.
 */
export function retention(
  parts: readonly CheckpointPart[],
  pending: ReadonlyMap<string, PendingObject>,
  rank: number,
  restartFrom: number | null,
): Retention {
  const keep: CheckpointPart[] = [];
  const drop: CheckpointPart[] = [];
  for (const part of parts) (restartFrom === null || part.generation >= restartFrom ? keep : drop).push(part);
  const named = new Set<string>();
  for (const part of keep) for (const file of part.files) named.add(file.sha256);
  const candidates = new Set<string>();
  for (const part of drop) for (const file of part.files) candidates.add(file.sha256);
  const stillPending = new Map<string, PendingObject>();
  for (const [sha, object] of pending) {
    const ranks = new Set([...object.ranks].filter((each) => each !== rank));
    if (ranks.size > 0) stillPending.set(sha, { bytes: object.bytes, ranks });
    else candidates.add(sha);
  }
  const dropObjects = [...candidates].filter((sha) => !named.has(sha) && !stillPending.has(sha)).sort();
  return { keep, drop, pending: stillPending, dropObjects };
}
