// The plan: what a scheduling pass decides (schedule.ts), or a user's request; applied as one
// by reactor/handlers/apply-plan.ts. Each entry says one thing to do. A preemption is one entry:
// the stop and the placement it makes room for, the room then kept for that placement until it
// starts (state/room-reservations.ts), so no other job takes it between the stop and the start.

import type { StopEntry } from "./view.ts";

/** Start a task's next attempt on one host. */
export interface TaskPlacement {
  kind: "task";
  jobId: string;
  taskIndex: number;
  host: string;
  /** Into room a preemption kept for this task: the attempt counts as started by a preemption. */
  reserved?: true;
}

/** Start a multi-node attempt: every rank at once (stages/gang.ts). */
export interface GangPlacement {
  kind: "gang";
  jobId: string;
  taskIndex: number;
  /** The host of rank 0 (ranks[0]). */
  host: string;
  /** The host of each rank, rank 0 first. */
  ranks: string[];
}

/** One more attempt of a task that is running already (stages/replicas.ts). */
export interface ReplicaPlacement {
  kind: "replica";
  jobId: string;
  taskIndex: number;
  host: string;
}

export type Placement = TaskPlacement | GangPlacement | ReplicaPlacement;

/**
 * Stop a running task of lower priority and keep its room for a task of the job it makes room for
 * (GrADS Permission Service). The task starts there once the stopped one has ended, or anywhere
 * sooner if room frees elsewhere first.
 */
export interface Preemption {
  /** The stop, ended `preempted`. */
  stop: StopEntry;
  /** The task the room is kept for, on the stopped task's host. */
  place: TaskPlacement;
}

/** What a scheduling pass (or a user's request) decides. */
export interface Plan {
  place: Placement[];
  stop: StopEntry[];
  preempt: Preemption[];
  /** When the scheduler wants another pass even if nothing happens (it waits for a task expected to end). */
  recheckAt?: number;
}

/** The hosts a placement takes, rank 0 first. */
export function hostsOfPlacement(placement: Placement): string[] {
  return placement.kind === "gang" ? placement.ranks : [placement.host];
}

/** A task's key in the sets of a pass. */
export function taskKey(jobId: string, taskIndex: number): string {
  return `${jobId}\u0000${taskIndex}`;
}
