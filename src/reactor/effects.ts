// What handlers ask the outside world to do. The reactor performs them only once the changes of
// the same step are committed: no agent hears of a decision the store could still lose.

import type { ServerMessage } from "../protocol/messages.ts";
import type { JobEntry } from "../state/job-entry.ts";

export type Effect =
  | { kind: "send"; host: string; message: ServerMessage }
  /** Drop the agent's connection, so that it must say hello again (and learn what to kill). */
  | { kind: "disconnect"; host: string }
  /** A job's state changed. */
  | { kind: "jobChanged"; job: JobEntry };

/** How the reactor reaches agents; the gateway implements it. */
export interface AgentLinks {
  send(host: string, message: ServerMessage): boolean;
  disconnect(host: string): void;
}
