// Queue order. A user's own jobs: the higher QoS tier first, then the higher job priority, then
// older, then submitted first. Between users, job priority counts for nothing: the tier's priority
// makes the bands, and within a band owners take turns by fair share (schedule.ts), ties going to
// the job submitted first (compareSubmitOrder).

import type { JobView } from "./view.ts";

type Ordered = Pick<JobView, "priority" | "createdAt" | "seq" | "qosPriority">;

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
