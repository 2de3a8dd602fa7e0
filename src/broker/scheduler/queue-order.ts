// FIFO within priority: higher priority first, then older, then submitted first.

import type { JobView } from "./view.ts";

type Ordered = Pick<JobView, "priority" | "createdAt" | "seq">;

export function compareQueueOrder(a: Ordered, b: Ordered): number {
  return b.priority - a.priority || a.createdAt - b.createdAt || a.seq - b.seq;
}
