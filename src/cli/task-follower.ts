// Following a task's output across its attempts, for `steward run` and `steward logs -f`: each
// attempt is asked for by its number and read from its first byte until it ends, then the task's
// next attempt (a retry, a migration, a hold and release, a lost host) the same way, until the task
// has ended. Asking by number keeps one attempt's bytes from being read at another's offset.

import { setTimeout as sleep } from "node:timers/promises";
import type { Attempt, Task } from "../common/api/jobs.ts";
import type { ApiClient } from "./client.ts";

const ENDED = new Set(["succeeded", "failed", "cancelled"]);

/** How often a followed task without its next attempt is asked again, at most (from 100 ms up). */
const TASK_POLL_MAX_MS = 1000;

export type LogStream = "stdout" | "stderr";

export interface FollowTaskOptions {
  /** The streams followed at once, each attempt's in turn. */
  streams: readonly LogStream[];
  /** A multi-node job's rank (0: rank 0). */
  rank?: number;
  /**
   * The first attempt followed: a number, or "latest" (the task's latest attempt when the follow
   * starts, its first if it has none yet).
   */
  from: number | "latest";
  /** Each chunk of an attempt's stream, as it comes. */
  onChunk: (stream: LogStream, chunk: Uint8Array) => void;
  /** The end of an attempt's stream (a line cut short may be flushed). */
  onStreamEnd?: (stream: LogStream) => void;
  /** Called before each attempt is followed; `first` is true for the first one of this follow. */
  onAttempt?: (attempt: Attempt, first: boolean) => void;
}

/** A task's attempts in turn, each's streams until it ends, until the task has ended. */
export async function followTask(
  client: ApiClient,
  id: string,
  index: number,
  options: FollowTaskOptions,
): Promise<void> {
  const path = `/api/v1/jobs/${encodeURIComponent(id)}/tasks/${index}`;
  let next: number | null = typeof options.from === "number" ? options.from : null;
  let first = true;
  let delay = 100;
  for (;;) {
    const task = await client.json<Task>("GET", path);
    if (next === null) next = Math.max(1, latestAttempt(task));
    // The next attempt: `next` itself, or the first after it should a number be missing.
    const wanted = next;
    const attempt = task.attempts
      .filter((each) => each.number >= wanted)
      .sort((a, b) => a.number - b.number)[0];
    if (attempt) {
      options.onAttempt?.(attempt, first);
      first = false;
      await Promise.all(
        options.streams.map((stream) => followAttempt(client, id, index, attempt.number, stream, options)),
      );
      next = attempt.number + 1;
      delay = 100;
      continue;
    }
    // No attempt `next`: done once the task has ended with none after the last one followed.
    if (ENDED.has(task.state) && latestAttempt(task) < next) return;
    await sleep(delay);
    delay = Math.min(TASK_POLL_MAX_MS, delay * 1.5);
  }
}

function latestAttempt(task: Task): number {
  return task.attempts.reduce((most, each) => Math.max(most, each.number), 0);
}

/** One attempt's stream from its first byte, followed until the attempt ends (the server sends it whole by then). */
async function followAttempt(
  client: ApiClient,
  id: string,
  index: number,
  attempt: number,
  stream: LogStream,
  options: FollowTaskOptions,
): Promise<void> {
  const response = await client.request("GET", `/api/v1/jobs/${encodeURIComponent(id)}/logs`, {
    query: { task: index, stream, follow: 1, attempt, rank: options.rank ? options.rank : undefined },
  });
  if (response.body) for await (const chunk of response.body) options.onChunk(stream, chunk);
  options.onStreamEnd?.(stream);
}

/** The line `steward logs -f` writes to stderr when it moves on to a task's next attempt. */
export function attemptSeparator(attempt: Pick<Attempt, "number" | "host">): string {
  return `--- attempt ${attempt.number} on ${attempt.host} ---\n`;
}
