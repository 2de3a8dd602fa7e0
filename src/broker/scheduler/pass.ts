// One scheduling pass's working state, which its stages share (schedule.ts): the room left on each
// host that takes work, which the pass takes as it places; the free slots left in all; the plan so
// far and the jobs it places; the limits, counting what it places (stages/limit.ts); and for each
// job the hosts it may use, feasible (stages/feasibility.ts) then scored (stages/rank.ts, with the
// bytes of its inputs each host holds: data-affinity.ts), worked out once for jobs alike (batches.ts).

import { batchKey, ExhaustedBatches, scoreKey } from "./batches.ts";
import { inputBytesByHost } from "./data-affinity.ts";
import type { Placement, Plan } from "./plan.ts";
import { policyOf } from "./policy.ts";
import { type FeasibilityJob, feasibleHosts } from "./stages/feasibility.ts";
import { type Capacity, capacityOf } from "./stages/fit.ts";
import type { FitQueue } from "./stages/fit-queue.ts";
import { PassLimits } from "./stages/limit.ts";
import { type ScoredHost, scoreHosts } from "./stages/rank.ts";
import type { HostView, JobView, MetaschedulingPolicy, PassTrace, SchedulerState } from "./view.ts";

/**
 * What the stages that stop work (stages/preemption.ts, stages/rescheduling.ts) read of a pass: its
 * state, policy and trace, the feasible hosts of a job, and the room left on each host.
 */
export type StopStageInput = Pick<Pass, "state" | "policy" | "trace" | "feasibleFor" | "capacity">;

/** Feasible hosts scored for a job, with the room left on each (the same order). */
export interface Scored {
  scored: ScoredHost[];
  rooms: Capacity[];
  /** The best host for the batch's own need, made at the first task that has it. */
  queue?: FitQueue;
}

export class Pass {
  readonly state: SchedulerState;
  readonly trace: PassTrace;
  readonly policy: MetaschedulingPolicy;
  readonly plan: Plan = { place: [], stop: [], preempt: [] };
  /** The room left on each host that takes work (ready and connected): the pass's own copies. */
  readonly capacity = new Map<string, Capacity>();
  /** Free slots left on those hosts in all: the queue's turns go on while some are. */
  slotsFree = 0;
  /** The jobs of this pass's placements, by id (replicas look at those of jobs asking for more than one). */
  readonly placedJobs = new Map<string, JobView>();
  /** Tasks placed first, in room kept for them (taskKey): the queue's turn skips them. */
  readonly placedFirst = new Set<string>();
  /** Cpus placed first per owner, counted into the owner's share when its turns come. */
  readonly placedCpus = new Map<string, number>();
  /** The running limits and the arrays' throttles, this pass's placements counted. */
  readonly limits: PassLimits;
  /** The batch keys that found no room in this pass. */
  readonly exhausted = new ExhaustedBatches();
  /** Feasible hosts per batch key: jobs alike in resources and requirements share the answer. */
  readonly #feasibleByKey = new Map<string, HostView[]>();
  /** Scored hosts per score key (scoreKey). */
  readonly #scoredByKey = new Map<string, Scored>();

  constructor(state: SchedulerState, trace: PassTrace) {
    this.state = state;
    this.trace = trace;
    this.policy = policyOf(state.policy);
    this.limits = new PassLimits(state.qos, state.runningUse);
    for (const host of state.hosts) {
      if (host.state !== "ready" || !host.connected) continue;
      this.capacity.set(host.name, capacityOf(host));
      this.slotsFree += Math.max(0, host.slotsFree);
    }
  }

  /** The feasibility stage for the job, once a batch: the hosts that take work in this pass and may run it. */
  readonly feasibleFor = (job: FeasibilityJob, key = batchKey(job)): HostView[] => {
    let feasible = this.#feasibleByKey.get(key);
    if (!feasible) {
      feasible = feasibleHosts(job, this.state.hosts, this.capacity);
      this.#feasibleByKey.set(key, feasible);
    }
    return feasible;
  };

  /**
   * The rank stage over the job's feasible hosts (`key`: its batch key), shared by jobs alike in
   * batch and rank (100,000 single-task jobs of one kind are scored once a pass, not once each).
   */
  scoredFor(job: JobView, key: string): Scored {
    // Data affinity: the hosts holding the job's inputs (only for a job with digests some host holds).
    const held =
      job.inputDigests === undefined ? null : inputBytesByHost(job.inputDigests, this.state.cached);
    const shared = scoreKey(job, key, held !== null);
    if (shared === null) return this.#score(job, key, held);
    let scored = this.#scoredByKey.get(shared);
    if (!scored) {
      scored = this.#score(job, key, held);
      this.#scoredByKey.set(shared, scored);
    }
    return scored;
  }

  #score(job: JobView, key: string, held: ReadonlyMap<string, number> | null): Scored {
    const scored = scoreHosts(job, this.feasibleFor(job, key), held);
    return { scored, rooms: scored.map((each) => this.capacity.get(each.host.name)!) };
  }

  /** Adds a placement of the job to the plan; it counts against the job's limits. */
  place(job: JobView, placement: Placement): void {
    this.placedJobs.set(job.id, job);
    this.plan.place.push(placement);
    this.limits.placed(job);
  }

  /** Takes a host's room away from everything behind the gang that reserved it. */
  withhold(name: string): void {
    const room = this.capacity.get(name);
    if (!room) return;
    this.slotsFree -= Math.max(0, room.slotsFree);
    room.slotsFree = 0;
    room.memoryFreeMb = 0;
  }

  /** Asks for another pass at `at` at the latest (a rule that lapses, a task expected to end). */
  recheckBy(at: number): void {
    this.plan.recheckAt = Math.min(this.plan.recheckAt ?? at, at);
  }
}
