// Rescheduling (GrADS Rescheduler, GridWay's "better resource" migration): a running task moves
// to a host with room when the estimated gain passes the threshold:
//   gain = (remaining here - (remaining there + migration cost)) / remaining here
// with remaining there scaled by the hosts' speed scores, and the cost the time to move its
// checkpoint (uploaded once more at the stop, fetched by the new host) at the observed rate.

import { evaluateRank } from "../../../common/model/cel.ts";
import { predictedSeconds, remainingSeconds } from "../estimate.ts";
import type { MetaschedulingPolicy } from "../policy.ts";
import type { HostView, RunningTaskView } from "../view.ts";

export function migrationGain(remainingHere: number, remainingThere: number, costSeconds: number): number {
  if (remainingHere <= 0) return Number.NEGATIVE_INFINITY;
  return (remainingHere - (remainingThere + costSeconds)) / remainingHere;
}

/** Time the work left takes on a host of speed `there`, measured at speed `here`. */
export function remainingOnHost(remainingHere: number, here: number, there: number): number {
  if (here <= 0 || there <= 0) return Number.POSITIVE_INFINITY;
  return (remainingHere * here) / there;
}

/** Seconds to move a checkpoint of `bytes`: its last upload at the stop and the fetch on the new host. */
export function migrationCostSeconds(bytes: number, transferBytesPerSecond: number): number {
  return (2 * bytes) / transferBytesPerSecond;
}

/** Why a running task is not considered for a move, or null when it is. */
export function notMovable(
  task: RunningTaskView,
  now: number,
  policy: Pick<MetaschedulingPolicy, "discoverySeconds" | "minRemainingFraction">,
): string | null {
  if (task.stopping) return "it is already stopping";
  if (task.checkpointBytes === null) return "it has no checkpoint";
  const remaining = remainingSeconds(task.progress, now);
  const predicted = predictedSeconds(task.progress);
  if (remaining === null || predicted === null) return "its remaining time cannot be estimated yet";
  if (remaining < policy.minRemainingFraction * predicted) {
    return `less than ${Math.round(policy.minRemainingFraction * 100)} % of its time is left`;
  }
  if (task.lastMovedAt !== null && now - task.lastMovedAt < policy.discoverySeconds * 1000) {
    return "it moved less than one discovery period ago";
  }
  return null;
}

export interface MoveEstimate {
  host: string;
  gain: number;
  remainingHere: number;
  remainingThere: number;
  costSeconds: number;
}

/**
 * The best move of `task` among `targets` (hosts with room for it, feasible for its job), or null
 * when none ranks at least as high under the job's rank or none is faster. `current` is its host.
 */
export function bestMove(
  task: RunningTaskView,
  current: HostView,
  targets: readonly HostView[],
  now: number,
  policy: Pick<MetaschedulingPolicy, "transferBytesPerSecond">,
): MoveEstimate | null {
  const remainingHere = remainingSeconds(task.progress, now);
  if (remainingHere === null || task.checkpointBytes === null) return null;
  const cost = migrationCostSeconds(task.checkpointBytes, policy.transferBytesPerSecond);
  const rank = task.job.rank;
  const rankHere = rank ? evaluateRank(rank, current.facts) : 0;
  let best: MoveEstimate | null = null;
  for (const host of targets) {
    if (host.name === current.name) continue;
    if (host.facts.speed <= current.facts.speed) continue;
    if (rank && evaluateRank(rank, host.facts) < rankHere) continue;
    const remainingThere = remainingOnHost(remainingHere, current.facts.speed, host.facts.speed);
    const gain = migrationGain(remainingHere, remainingThere, cost);
    if (!best || gain > best.gain) {
      best = { host: host.name, gain, remainingHere, remainingThere, costSeconds: cost };
    }
  }
  return best;
}

/** The speed a target must have for a task at speed `here` to gain `threshold` even with no cost. */
export function speedNeeded(here: number, threshold: number): number {
  return threshold >= 1 ? Number.POSITIVE_INFINITY : here / (1 - threshold);
}
