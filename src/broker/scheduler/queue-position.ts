// Whom a pending job waits behind, for explain: the jobs that get their turn before it in the next
// pass and want the same hosts. Pure: the queue, the owners' shares and the time come in.

import { NO_SHARE, type OwnerShare } from "./fair-share.ts";
import { compareTurns, type Turn } from "./queue-order.ts";
import type { JobView } from "./view.ts";

/** How many ids the sentence names before it says "and N more". */
export const AHEAD_NAMED_AT_MOST = 10;

/**
 * Whether job `a` has its turn before job `b` when a pass starts: the pass's own order of turns
 * (queue-order.ts compareTurns) with each owner's share as the pass starts. As the pass places
 * work, shares grow and owners alternate, so this is the order of the first turns, not a promise
 * about every later one.
 */
export function comesBefore(a: Turn, b: Turn, owners?: ReadonlyMap<string, OwnerShare>): boolean {
  const shareOf = (job: Turn) => owners?.get(job.owner ?? "") ?? NO_SHARE;
  return compareTurns(a, b, shareOf(a), shareOf(b)) < 0;
}

/** Whether a job has a task it could start at `now`. */
export function hasWorkNow(job: JobView, now: number): boolean {
  for (const _ of job.readyTasks(now)) return true;
  for (const _ of job.constrainedTasks?.(now) ?? []) return true;
  return false;
}

/**
 * The jobs of `queue` with work now that come before `job` and want one of the hosts it could
 * use (`wantsSameHosts`), in the order of their turns.
 */
export function jobsAhead(
  job: JobView,
  queue: readonly JobView[],
  now: number,
  wantsSameHosts: (other: JobView) => boolean,
  owners?: ReadonlyMap<string, OwnerShare>,
): JobView[] {
  return queue
    .filter(
      (other) =>
        other.id !== job.id &&
        comesBefore(other, job, owners) &&
        hasWorkNow(other, now) &&
        wantsSameHosts(other),
    )
    .sort((a, b) => (comesBefore(a, b, owners) ? -1 : comesBefore(b, a, owners) ? 1 : 0));
}

/**
 * `behind 3 jobs in the queue: 12, 15 (priority 5), 16 (priority 0)`; with `hidden` jobs of other
 * users counted but not named (a user's explain): `behind 4 jobs in the queue: 12 (priority 5) and
 * 1 job of other users`, or `behind 2 jobs of other users in the queue`.
 */
export function describeAhead(
  ahead: readonly Pick<JobView, "id" | "priority">[],
  namedAtMost: number = AHEAD_NAMED_AT_MOST,
  hidden = 0,
): string {
  const total = ahead.length + hidden;
  const jobs = (count: number) => `${count} job${count === 1 ? "" : "s"}`;
  if (ahead.length === 0) return `behind ${jobs(hidden)} of other users in the queue`;
  const named = ahead.slice(0, namedAtMost);
  const parts = named.map((job, i) =>
    i + 1 === named.length || named[i + 1].priority !== job.priority
      ? `${job.id} (priority ${job.priority})`
      : job.id,
  );
  const more = ahead.length > named.length ? ` and ${ahead.length - named.length} more` : "";
  const others = hidden > 0 ? ` and ${jobs(hidden)} of other users` : "";
  return `behind ${jobs(total)} in the queue: ${parts.join(", ")}${more}${others}`;
}
