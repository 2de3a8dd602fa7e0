// QoS tiers in a scheduling pass (the server's `--qos` file, common/model/qos-file.ts). Between
// users a job's own priority counts for nothing: the tier's priority makes the bands, and a job
// may stop another user's job only when its tier's `preempt` list names that job's tier. Within
// one user, job priority orders (a higher one may preempt the user's own lower one). The running
// limits of a tier (per user) and of a group hold a job back while the user or group is at them:
// the job waits, it is not refused. Pure: what runs comes in.

import { DEFAULT_QOS_POLICY, type GroupLimits, type QosPolicy, tierOf } from "../../common/model/qos-file.ts";
import { DEFAULT_QOS } from "../../common/model/qos-name.ts";
import type { Held, JobView, RunningUse } from "./view.ts";

export function userTierKey(owner: string, qos: string): string {
  return `${owner}\u0000${qos}`;
}

type Tiered = Pick<JobView, "owner" | "priority" | "qos" | "qosPriority">;

/**
 * Whether `job`, blocked for room, may stop the running `victim`. The same user: when it comes
 * first in the user's own order (tier priority, then job priority). Another user: only when the
 * job's tier preempts the victim's (the QoS file's `preempt`), whatever either job's priority.
 */
export function mayPreempt(job: Tiered, victim: Tiered, policy: QosPolicy = DEFAULT_QOS_POLICY): boolean {
  if ((job.owner ?? "") === (victim.owner ?? "")) {
    const tiers = (job.qosPriority ?? 0) - (victim.qosPriority ?? 0);
    if (tiers > 0 || (tiers === 0 && job.priority > victim.priority)) return true;
  }
  return tierOf(policy, job.qos).preempt.includes(victim.qos ?? DEFAULT_QOS);
}

/** What one placement of the job adds to its user's running use: every rank of a gang. */
export function heldBy(job: Pick<JobView, "cpus" | "gpus" | "gang">): Held {
  const ranks = Math.max(1, job.gang?.nodes ?? 1);
  return { cpus: job.cpus * ranks, gpus: (job.gpus ?? 0) * ranks };
}

/**
 * Whether adding `adding` to what `who` holds passes one of its running limits: the sentence that
 * says so (`user alice is at the limit of 64 running CPUs of QoS normal (64 running, a task needs
 * 4)`, `of`: ` of QoS normal`), or null when it fits.
 */
export function runningLimitReached(
  who: string,
  held: Held,
  adding: Held,
  limits: Pick<GroupLimits, "maxRunningCpus" | "maxRunningGpus">,
  of = "",
): string | null {
  const checks = [
    ["CPUs", limits.maxRunningCpus, held.cpus, adding.cpus],
    ["GPUs", limits.maxRunningGpus, held.gpus, adding.gpus],
  ] as const;
  for (const [unit, limit, now, more] of checks) {
    if (limit === null || more === 0 || now + more <= limit) continue;
    return `${who} is at the limit of ${limit} running ${unit}${of} (${now} running, a task needs ${more})`;
  }
  return null;
}

/** Whether a policy sets any running limit: without one, a pass checks nothing. */
function hasRunningLimits(policy: QosPolicy): boolean {
  for (const tier of policy.tiers.values())
    if (tier.maxRunningCpus !== null || tier.maxRunningGpus !== null) return true;
  for (const group of policy.groups.values())
    if (group.maxRunningCpus !== null || group.maxRunningGpus !== null) return true;
  return false;
}

/** A refusal of a user's job of a tier and a need, kept for the rest of a pass. */
interface Refused {
  owner: string;
  qos: string;
  cpus: number;
  gpus: number;
  why: string;
}

/** The running limits through one pass: what runs, plus what the pass places as it goes. */
export class RunningQuotas {
  readonly #policy: QosPolicy;
  readonly #use: RunningUse;
  readonly #active: boolean;
  readonly #placedByUserTier = new Map<string, Held>();
  readonly #placedByGroup = new Map<string, Held>();
  /**
   * The last refusal per user and tier, with the need it refused: what a pass holds only grows,
   * so a job of the same need is refused alike without the sums (a held user's long backlog).
   */
  readonly #refused = new Map<string, Map<string, Refused>>();
  /**
   * The last refusal, by user, tier and need: a held user's backlog comes one job after another
   * (a pass passes over it, schedule.ts), and each is answered here without a key or a lookup.
   */
  #last: Refused | null = null;

  constructor(policy: QosPolicy = DEFAULT_QOS_POLICY, use?: RunningUse) {
    this.#policy = policy;
    this.#use = use ?? { byUserTier: new Map(), byGroup: new Map(), groupOf: new Map() };
    this.#active = hasRunningLimits(policy);
  }

  /** Why the job's next placement must wait (its user or group is at a running limit), or null. */
  held(job: Pick<JobView, "owner" | "qos" | "cpus" | "gpus" | "gang">): string | null {
    if (!this.#active) return null;
    const owner = job.owner ?? "";
    const qos = job.qos ?? DEFAULT_QOS;
    const ranks = Math.max(1, job.gang?.nodes ?? 1);
    const cpus = job.cpus * ranks;
    const gpus = (job.gpus ?? 0) * ranks;
    const last = this.#last;
    if (last !== null && last.owner === owner && last.qos === qos && last.cpus === cpus && last.gpus === gpus)
      return last.why;
    let byTier = this.#refused.get(owner);
    let refused = byTier?.get(qos);
    if (!refused || refused.cpus !== cpus || refused.gpus !== gpus) {
      const why = this.#heldFor(owner, qos, userTierKey(owner, qos), { cpus, gpus });
      if (why === null) return null;
      refused = { owner, qos, cpus, gpus, why };
      if (!byTier) {
        byTier = new Map();
        this.#refused.set(owner, byTier);
      }
      byTier.set(qos, refused);
    }
    this.#last = refused;
    return refused.why;
  }

  #heldFor(owner: string, qos: string, key: string, adding: Held): string | null {
    const byUser = runningLimitReached(
      `user ${owner || "(anonymous)"}`,
      sum(this.#use.byUserTier.get(key), this.#placedByUserTier.get(key)),
      adding,
      tierOf(this.#policy, qos),
      ` of QoS ${qos}`,
    );
    if (byUser) return byUser;
    const group = this.#use.groupOf.get(owner);
    const limits = group === undefined ? undefined : this.#policy.groups.get(group);
    if (group === undefined || !limits) return null;
    return runningLimitReached(
      `group ${group} (of user ${owner})`,
      sum(this.#use.byGroup.get(group), this.#placedByGroup.get(group)),
      adding,
      limits,
    );
  }

  /**
   * Whether every job of the owner is held for the rest of the pass: their group is at its limit
   * of running cpus (every task takes one at least), so no tier of theirs can place.
   */
  ownerHeld(owner: string): boolean {
    if (!this.#active) return false;
    const group = this.#use.groupOf.get(owner);
    const limit = group === undefined ? null : (this.#policy.groups.get(group)?.maxRunningCpus ?? null);
    if (group === undefined || limit === null) return false;
    return (this.#use.byGroup.get(group)?.cpus ?? 0) + (this.#placedByGroup.get(group)?.cpus ?? 0) >= limit;
  }

  /** The pass placed the job's next task (or gang). */
  add(job: Pick<JobView, "owner" | "qos" | "cpus" | "gpus" | "gang">): void {
    if (!this.#active) return;
    const owner = job.owner ?? "";
    const adding = heldBy(job);
    const key = userTierKey(owner, job.qos ?? DEFAULT_QOS);
    this.#placedByUserTier.set(key, sum(this.#placedByUserTier.get(key), adding));
    const group = this.#use.groupOf.get(owner);
    if (group !== undefined) this.#placedByGroup.set(group, sum(this.#placedByGroup.get(group), adding));
  }
}

function sum(a: Held | undefined, b: Held | undefined): Held {
  return { cpus: (a?.cpus ?? 0) + (b?.cpus ?? 0), gpus: (a?.gpus ?? 0) + (b?.gpus ?? 0) };
}
