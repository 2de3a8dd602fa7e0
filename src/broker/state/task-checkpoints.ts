// A task's checkpoints as the server knows them: the committed parts it keeps (records, in the
// store too) and the objects uploaded since the ranks that sent them last committed (in memory:
// a commit of theirs may name them next). Which generation is complete, which parts and objects
// go, is decided from this alone (handlers/checkpoints.ts), never from a listing of blobs.

import type { CheckpointPart } from "../../common/model/records.ts";

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
