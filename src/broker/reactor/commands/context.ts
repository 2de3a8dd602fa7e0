// What a command runs with: the reactor that runs its handler, the committer whose flush makes an
// earlier answer durable, and the read model for what a command checks before its handler runs.

import type { GroupCommitter } from "../../store/group-commit.ts";
import type { Reactor } from "../reactor.ts";
import type { ReadModel } from "../read-model.ts";

export interface CommandContext {
  readonly reactor: Reactor;
  readonly committer: GroupCommitter;
  readonly read: ReadModel;
}
