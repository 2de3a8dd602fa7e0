// What the agents' checkpoint uploads record, one command each, durable when they resolve.

import type { CheckpointPart } from "../../../common/model/records.ts";
import {
  type CheckpointCommit,
  type CheckpointCommitted,
  type CheckpointObjectStored,
  checkpointObjectStored,
  commitCheckpoint,
  recordLegacyParts,
} from "../handlers/checkpoints.ts";
import type { CheckpointCommands } from "../ports.ts";
import type { CommandContext } from "./context.ts";

export function checkpointCommands({ reactor }: CommandContext): CheckpointCommands {
  return {
    /** An object of a task's checkpoint is stored: a commit may name it. */
    objectStored(stored: CheckpointObjectStored): Promise<void> {
      return reactor.run((step) => checkpointObjectStored(step, stored));
    },

    /** A checkpoint manifest committed by a live attempt (handlers/checkpoints.ts); older blobs dropped. */
    commit(commit: CheckpointCommit): Promise<CheckpointCommitted> {
      return reactor.run((step) => commitCheckpoint(step, commit));
    },

    /** Parts read from a store of an earlier version's manifests at start (server/legacy-checkpoints.ts). */
    recordLegacyParts(parts: readonly CheckpointPart[]): Promise<void> {
      return reactor.run((step) => recordLegacyParts(step, parts));
    },
  };
}
