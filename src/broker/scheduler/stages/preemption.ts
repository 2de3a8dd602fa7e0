// Preemption (GrADS Permission Service, appendix A.3): a task that cannot start for want of room
// may stop a running task it outranks: the same user's task of a lower priority, or another
// user's task of a tier its QoS tier preempts (qos.ts mayPreempt; a job's priority never reaches
// another user's task). It waits instead when a running task that would make
// room is expected to end within the wait; otherwise it stops, among the preemptible tasks whose
// stop makes room, the one with the largest remaining time (GrADS divides by the new job's
// predicted time, the same for every candidate, so the order is the same). The stage of a pass
// (preempt) runs after the placements, for the first blocked jobs in queue order, and stops at
// most one task a pass; the stop names the task it makes room for, whose room is then kept for it.

import type { QosPolicy } from "../../../common/model/qos-file.ts";
import { DEFAULT_QOS } from "../../../common/model/qos-name.ts";
import { progressMade, remainingSeconds } from "../estimate.ts";
import { rankedAtOrBelow } from "../metascheduling.ts";
import type { StopStageInput } from "../pass.ts";
import { type Preemption, taskKey } from "../plan.ts";
import { mayPreempt } from "../qos.ts";
import type { HostView, JobView, MetaschedulingPolicy, RunningTaskView, StopEntry } from "../view.ts";
import { type Capacity, fitsCapacity } from "./fit.ts";
import { throttleAllows } from "./throttle.ts";

/** Why a running task may not be preempted, or null when it may. */
export function notPreemptible(
  task: RunningTaskView,
  policy: Pick<MetaschedulingPolicy, "preemptMinProgress">,
): string | null {
  if (task.stopping) return "it is already stopping";
  if (task.startedByPreemption) return "it was started by a preemption";
  if (task.checkpointBytes === null) return "it has no checkpoint";
  const made = progressMade(task.progress);
  if (made === null) return "it reports no progress";
  if (made < policy.preemptMinProgress) {
    return `progress ${made.toFixed(2)} since its start, under ${policy.preemptMinProgress}`;
  }
  return null;
}

/** Whether stopping `task` would give `job` room on its host (with what the host has free now). */
export function makesRoom(
  job: Pick<JobView, "cpus" | "memoryMb" | "gpus" | "custom">,
  task: RunningTaskView,
  free: Capacity | undefined,
): boolean {
  if (!free) return false;
  const custom = { ...free.customFree };
  for (const [name, units] of Object.entries(task.job.custom ?? {}))
    custom[name] = (custom[name] ?? 0) + units;
  const freed: Capacity = {
    slotsFree: free.slotsFree + task.job.cpus,
    memoryFreeMb: free.memoryFreeMb + task.job.memoryMb,
    gpusFree: (free.gpusFree ?? 0) + (task.job.gpus ?? 0),
    customFree: custom,
  };
  return fitsCapacity(job, freed);
}

export type PreemptionDecision =
  /** Stop `victim` to make room for the job. */
  | { kind: "preempt"; victim: RunningTaskView; remainingSeconds: number }
  /** A task that would make room ends soon: wait for it. */
  | { kind: "wait"; until: RunningTaskView; remainingSeconds: number | null }
  | { kind: "none"; reason: string };

/**
 * What to do for `job`, which has a ready task that fits nowhere now. `feasible` are the hosts the
 * job may run on (requirements, size), `free` their capacity left in this pass.
 */
export function decidePreemption(
  job: Pick<
    JobView,
    "id" | "priority" | "cpus" | "memoryMb" | "gpus" | "custom" | "owner" | "qos" | "qosPriority"
  >,
  feasible: readonly HostView[],
  free: ReadonlyMap<string, Capacity>,
  running: readonly RunningTaskView[],
  now: number,
  policy: Pick<MetaschedulingPolicy, "preemptWaitSeconds" | "preemptMinProgress">,
  qos?: QosPolicy,
): PreemptionDecision {
  const hosts = new Set(feasible.map((host) => host.name));
  let best: { victim: RunningTaskView; remaining: number } | null = null;
  for (const task of running) {
    if (!hosts.has(task.host) || !makesRoom(job, task, free.get(task.host))) continue;
    // A task being stopped frees its room soon; so does one about to end (GrADS waits 5 min for it).
    if (task.stopping) return { kind: "wait", until: task, remainingSeconds: null };
    const remaining = remainingSeconds(task.progress, now);
    if (remaining !== null && remaining <= policy.preemptWaitSeconds) {
      return { kind: "wait", until: task, remainingSeconds: remaining };
    }
    // Never a task the job does not outrank (another user's: only by the tiers).
    if (!mayPreempt(job, task.job, qos)) continue;
    if (remaining === null || notPreemptible(task, policy) !== null) continue;
    if (!best || remaining > best.remaining) best = { victim: task, remaining };
  }
  if (best) return { kind: "preempt", victim: best.victim, remainingSeconds: best.remaining };
  return {
    kind: "none",
    reason:
      "no task it may preempt (the same user's of a lower priority, or of a tier its QoS tier preempts) would make room",
  };
}

/** What the order of preemption reads of a job (metascheduling.ts rankedAtOrBelow). */
type Ranked = Pick<JobView, "priority" | "qosPriority">;

/** Blocked jobs looked at in one pass: the first in queue order matter, and a pass must stay short. */
export const PREEMPTION_JOBS_PER_PASS = 8;
/** How soon to look again while waiting for a task expected to end. */
export const PREEMPTION_RECHECK_MS = 1000;

/** The running task last in the order of tier priority, then job priority (null when none: nothing to preempt). */
function lowestRanked(running: readonly RunningTaskView[]): Ranked | null {
  let lowest: Ranked | null = null;
  for (const task of running) if (lowest === null || !rankedAtOrBelow(lowest, task.job)) lowest = task.job;
  return lowest;
}

/**
 * The job's ready tasks that this pass did not place (`placed`: keys of taskKey): whether there is
 * one, and the first that has no room kept for it yet (`reserved`), which a preemption would name.
 */
function unplacedTask(
  job: JobView,
  placed: ReadonlySet<string>,
  reserved: ReadonlySet<string>,
  now: number,
): { any: boolean; unreserved: number | null } {
  let any = false;
  for (const index of job.readyTasks(now)) {
    const key = taskKey(job.id, index);
    if (placed.has(key)) continue;
    any = true;
    if (!reserved.has(key)) return { any, unreserved: index };
  }
  return { any, unreserved: null };
}

/** How many of the job's tasks this pass placed (read only for a throttled array). */
function placedOf(job: JobView, placed: ReadonlySet<string>): number {
  const prefix = taskKey(job.id, 0).slice(0, -1); // the key less its task index
  let count = 0;
  for (const key of placed) if (key.startsWith(prefix)) count++;
  return count;
}

/**
 * The preemption stage, after the placements of a pass (`placed`: the tasks they place, taskKey):
 * the first blocked jobs in queue order, at most PREEMPTION_JOBS_PER_PASS of them, each asked
 * decidePreemption; the first that may stop a task stops it (one stop a pass: GrADS takes one new
 * job at a time), and the room is kept for the job's first task with no room kept yet (plan.ts).
 * A job waits instead when a task that would make room for it ends soon (another pass then).
 */
export function preempt(
  { state, feasibleFor, capacity, policy, trace }: StopStageInput,
  running: () => readonly RunningTaskView[],
  placed: ReadonlySet<string>,
  /** Why a job must wait for a running limit of its tier or group (qos.ts), or null: such a job preempts nothing. */
  held: (job: JobView) => string | null = () => null,
): { preempt: Preemption[]; stop: StopEntry[]; recheckAt?: number } {
  const reserved = new Set((state.reserved ?? []).map((room) => taskKey(room.job.id, room.taskIndex)));
  let lowest: Ranked | null | undefined;
  let looked = 0;
  for (const job of state.jobs) {
    if (looked >= PREEMPTION_JOBS_PER_PASS) break;
    lowest ??= lowestRanked(running());
    // The queue is in this order too: no job from here on may preempt a running task.
    if (lowest === null || rankedAtOrBelow(job, lowest)) break;
    // First, as the cheapest: a user at a running limit has a long backlog of such jobs.
    if (held(job) !== null) continue;
    const unplaced = unplacedTask(job, placed, reserved, state.now);
    if (!unplaced.any) continue;
    // An array at its throttle waits for its own tasks, not for room another job's would free.
    if (job.parallel !== undefined && !throttleAllows(job, placedOf(job, placed))) continue;
    const feasible = feasibleFor(job);
    if (feasible.length === 0) continue;
    looked++;
    const decision = decidePreemption(job, feasible, capacity, running(), state.now, policy, state.qos);
    if (decision.kind === "wait") {
      trace.noPreemption?.(job, "a running task that would make room for it ends soon: it waits for that");
      return { preempt: [], stop: [], recheckAt: state.now + PREEMPTION_RECHECK_MS };
    }
    if (decision.kind === "none") trace.noPreemption?.(job, decision.reason);
    if (decision.kind !== "preempt" || unplaced.unreserved === null) continue;
    const { victim, remainingSeconds } = decision;
    // Across tiers the tier decided (its `preempt` list), not the job's priority: the reason says which.
    const forQos =
      (job.qos ?? DEFAULT_QOS) !== (victim.job.qos ?? DEFAULT_QOS) ? (job.qos ?? DEFAULT_QOS) : null;
    const stop: StopEntry = {
      jobId: victim.job.id,
      taskIndex: victim.taskIndex,
      attempt: victim.attempt,
      intent: {
        outcome: "preempted",
        reason: { kind: "preempted-for", job: job.id, priority: job.priority, qos: forQos },
      },
      note: {
        kind: "preempt",
        data: {
          task: victim.taskIndex,
          attempt: victim.attempt,
          host: victim.host,
          for: job.id,
          forPriority: job.priority,
          ...(forQos === null ? {} : { forQos }),
          remainingSeconds,
        },
      },
    };
    // A gang needs its hosts all at once: no one host's room is kept for it.
    if (job.gang && job.gang.nodes > 1) return { preempt: [], stop: [stop] };
    const place = { kind: "task", jobId: job.id, taskIndex: unplaced.unreserved, host: victim.host } as const;
    return { preempt: [{ stop, place }], stop: [] };
  }
  return { preempt: [], stop: [] };
}
