// What the agents' checkpoint uploads record, one command each, durable when they resolve.

import {
  type CheckpointCommit,
  type CheckpointCommitted,
  type CheckpointObjectStored,
  checkpointObjectStored,
  commitCheckpoint,
} from "../handlers/checkpoints.ts";
import type { CommandContext } from "./context.ts";

export function checkpointCommands({ reactor }: CommandContext) {
  return {
    /** An object of a task's checkpoint is stored: a commit may name it. */
    objectStored(stored: CheckpointObjectStored): Promise<void> {
      return reactor.run((step) => checkpointObjectStored(step, stored));
    },

    /** A checkpoint manifest committed by a live attempt (handlers/checkpoints.ts); older blobs dropped. */
    commit(commit: CheckpointCommit): Promise<CheckpointCommitted> {
      return reactor.run((step) => commitCheckpoint(step, commit));
    },
  };
}

export type CheckpointCommands = ReturnType<typeof checkpointCommands>;
