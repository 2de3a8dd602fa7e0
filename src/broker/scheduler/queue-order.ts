// Queue order and the order of turns in a pass. A user's own jobs: the higher QoS tier first, then
// the higher job priority, then older, then submitted first (compareQueueOrder, the order the
// queue keeps). Between users, job priority counts for nothing: the tier's priority makes the
// bands, highest first, and within a band owners take turns by fair share (fair-share.ts), ties
// going to the job submitted first (compareSubmitOrder). compareTurns is that order of turns:
// explain (queue-position.ts) reads whom a job waits behind from it, and a pass (turns.ts) walks
// it: the bands highest first, each owner's jobs in queue order, and between the owners of a band
// compareOwnersTurns, its rule for them.

import { compareOwnerShares, type OwnerShare } from "./fair-share.ts";
import type { JobView } from "./view.ts";

type Ordered = Pick<JobView, "priority" | "createdAt" | "seq" | "qosPriority">;

/** What the order of turns reads of a job: its queue order and its owner. */
export type Turn = Ordered & Pick<JobView, "owner">;

/** One owner's order (and the order the queue keeps its jobs in). */
export function compareQueueOrder(a: Ordered, b: Ordered): number {
  return (
    (b.qosPriority ?? 0) - (a.qosPriority ?? 0) ||
    b.priority - a.priority ||
    a.createdAt - b.createdAt ||
    a.seq - b.seq
  );
}

/** Between users of one band with equal shares: older, then submitted first. */
export function compareSubmitOrder(
  a: Pick<JobView, "createdAt" | "seq">,
  b: Pick<JobView, "createdAt" | "seq">,
): number {
  return a.createdAt - b.createdAt || a.seq - b.seq;
}

/**
 * Negative when job `a` has its turn before job `b` in a pass, its owner's standing being `shareA`
 * and b's `shareB`: the higher QoS tier first; the same owner's by queue order; within a band,
 * another owner's by compareOwnersTurns. As a pass places work, shares grow (the pass hands in the
 * shares of now), so the order between two jobs may change from one turn to the next.
 */
export function compareTurns(a: Turn, b: Turn, shareA: OwnerShare, shareB: OwnerShare): number {
  const tiers = (b.qosPriority ?? 0) - (a.qosPriority ?? 0);
  if (tiers !== 0) return tiers;
  if ((a.owner ?? "") === (b.owner ?? "")) return compareQueueOrder(a, b);
  return compareOwnersTurns(a, b, shareA, shareB);
}

/**
 * The order of turns between two owners' jobs of one band (compareTurns's last rule, all a pass
 * weighs between the heads of its lanes, one owner each): the owner with the smaller share first
 * (fair-share.ts), then the job submitted first; job priority never counts between owners.
 */
export function compareOwnersTurns(
  a: Pick<JobView, "createdAt" | "seq">,
  b: Pick<JobView, "createdAt" | "seq">,
  shareA: OwnerShare,
  shareB: OwnerShare,
): number {
  return compareOwnerShares(shareA, shareB) || compareSubmitOrder(a, b);
}
