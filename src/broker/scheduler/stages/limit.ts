// Limit: may the job place one more task (or its gang) in this pass, whatever hosts it may use?
// Its user's running limits of its QoS tier and its group's (qos.ts RunningQuotas) hold it while
// they are reached: it waits, it is not refused. Then its array's throttle (`array.parallel`,
// throttle.ts) holds an array whose tasks hold as many slots as it allows. Both count what runs
// and what this pass places as it goes. (Submit-time quotas are checked at submit: quotas.ts.)

import type { QosPolicy } from "../../../common/model/qos-file.ts";
import { RunningQuotas } from "../qos.ts";
import type { JobView, RunningUse } from "../view.ts";
import { ArrayThrottle } from "./throttle.ts";

/** What one pass holds jobs to: the running limits and the arrays' throttles, with its own placements counted. */
export class PassLimits {
  /** The running limits of the tiers and groups (the replica and preemption stages ask them too). */
  readonly running: RunningQuotas;
  /** The tasks of throttled arrays placed in this pass. */
  readonly throttle = new ArrayThrottle();

  constructor(policy?: QosPolicy, use?: RunningUse) {
    this.running = new RunningQuotas(policy, use);
  }

  /** The pass placed the job's next task (or its gang): it counts against the job's limits. */
  placed(job: JobView): void {
    this.running.add(job);
    if (!isGang(job)) this.throttle.placed(job);
  }
}

/** Which limit holds a job, and the sentence that says so. */
export interface LimitReached {
  /**
   * `running`: its user or group is at a running limit, which holds every job of theirs alike for
   * the rest of the pass (what it holds only grows); `throttle`: its own array's.
   */
  limit: "running" | "throttle";
  reason: string;
}

/**
 * The limit stage: why the job's next placement must wait in this pass (a running limit of its
 * user's tier or of its group first, then its array's throttle), or null when no limit holds it.
 * A gang is never an array (job-spec.ts): it has no throttle.
 */
export function limit(job: JobView, limits: PassLimits): LimitReached | null {
  const running = limits.running.held(job);
  if (running !== null) return { limit: "running", reason: running };
  if (isGang(job)) return null;
  const throttled = limits.throttle.reason(job);
  return throttled === null ? null : { limit: "throttle", reason: throttled };
}

/** A job of more than one rank, placed all at once (gang.ts). */
function isGang(job: Pick<JobView, "gang">): boolean {
  return job.gang !== undefined && job.gang.nodes > 1;
}
