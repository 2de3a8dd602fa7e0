// What handlers ask the outside world to do. The reactor performs them only once the changes of
// the same step are committed: no agent hears of a decision the store could still lose, and no
// blob is deleted while a record still names it.

import type { ServerMessage } from "../../common/protocol/messages.ts";
import type { JobEntry } from "../state/job-entry.ts";

/** Checkpoint blobs of one task that no record names any more. */
export interface CheckpointBlobDrop {
  jobId: string;
  taskIndex: number;
  /** Objects, by SHA-256. */
  objects: string[];
  /**
   * Parts dropped: their manifests are records, but a store of an earlier version kept them as
   * blobs too (rank null: a single-host task's manifest; else a rank's).
   */
  manifests: { rank: number | null; generation: number }[];
}

export type Effect =
  | { kind: "send"; host: string; message: ServerMessage }
  /** Drop the agent's connection, so that it must say hello again (and learn what to kill). */
  | { kind: "disconnect"; host: string }
  /** A job's state changed. */
  | { kind: "jobChanged"; job: JobEntry }
  /** Delete checkpoint blobs no record names any more (the step's answer waits for it). */
  | { kind: "dropCheckpointBlobs"; drop: CheckpointBlobDrop }
  /** An attempt was placed (for the queue-wait metric). */
  | { kind: "placed"; placed: AttemptPlaced };

/** An attempt placed, and how long its task waited for it. */
export interface AttemptPlaced {
  jobId: string;
  taskIndex: number;
  attempt: number;
  host: string;
  /** Since its job's submit (a first attempt), or its last attempt's end or back-off. */
  waitedMs: number;
}

/** How the reactor reaches agents; the gateway implements it. */
export interface AgentLinks {
  send(host: string, message: ServerMessage): boolean;
  disconnect(host: string): void;
}

/** How the reactor deletes checkpoint blobs; the server implements it over its blob store. */
export interface CheckpointBlobs {
  drop(drop: CheckpointBlobDrop): Promise<void>;
}
