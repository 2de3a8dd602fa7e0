// The metascheduler's order for stopping work (GrADS): a queued job may stop a running task only
// when it ranks above it in tier priority, then job priority. The preemption stage
// (stages/preemption.ts) stops looking at the queue, which is in that order, at the first job that
// ranks above no running task; the planner skips the stage when the queue's first job does not
// (planner/plan-pass.ts).

import type { JobView } from "./view.ts";

type Keyed = Pick<JobView, "priority" | "qosPriority">;

/**
 * Whether `a` comes after `b` or with it in the order of tier priority, then job priority. Every
 * task a job may preempt comes strictly after it (qos.ts mayPreempt: the same user's lower job, or
 * a tier its tier preempts, which the QoS file makes of a lower priority).
 */
export function rankedAtOrBelow(a: Keyed, b: Keyed): boolean {
  const tiers = (a.qosPriority ?? 0) - (b.qosPriority ?? 0);
  return tiers < 0 || (tiers === 0 && a.priority <= b.priority);
}
