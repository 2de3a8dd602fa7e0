// Preemption (GrADS Permission Service, appendix A.3): a task that cannot start for want of room
// may stop a running task it outranks: the same user's task of a lower priority, or another
// user's task of a tier its QoS tier preempts (qos.ts mayPreempt; a job's priority never reaches
// another user's task). It waits instead when a running task that would make
// room is expected to end within the wait; otherwise it stops, among the preemptible tasks whose
// stop makes room, the one with the largest remaining time (GrADS divides by the new job's
// predicted time, the same for every candidate, so the order is the same).

import type { QosPolicy } from "../../../common/model/qos-file.ts";
import { progressMade, remainingSeconds } from "../estimate.ts";
import type { MetaschedulingPolicy } from "../policy.ts";
import { mayPreempt } from "../qos.ts";
import type { HostView, JobView, RunningTaskView } from "../view.ts";
import { type Capacity, fitsCapacity } from "./fit.ts";

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
