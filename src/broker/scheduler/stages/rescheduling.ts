// Rescheduling (GrADS Rescheduler, GridWay's "better resource" migration): a running task moves
// to a host with room when the estimated gain passes the threshold:
//   gain = (remaining here - (remaining there + migration cost)) / remaining here
// with remaining there scaled by the hosts' speed scores, and the cost the time to move its
// checkpoint (uploaded once more at the stop, fetched by the new host) at the observed rate.

import { evaluateRank } from "../../../common/model/cel.ts";
import { batchKey } from "../batches.ts";
import { predictedSeconds, remainingSeconds } from "../estimate.ts";
import type { StopStageInput } from "../pass.ts";
import type { HostView, MetaschedulingPolicy, RunningTaskView, StopEntry } from "../view.ts";
import type { FeasibilityJob } from "./feasibility.ts";
import { fitsCapacity, takeRoom } from "./fit.ts";

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

/**
 * The rescheduling stage, after the placements and preemption of a pass, into the room left
 * (`capacity`, taken as moves are chosen): each movable running task's best move to a faster host
 * with room, the largest gains first, those above the threshold stopped with the host to move to.
 */
export function reschedule(
  { state, feasibleFor, capacity, policy, trace }: StopStageInput,
  running: readonly RunningTaskView[],
): StopEntry[] {
  const hosts = new Map(state.hosts.map((host) => [host.name, host]));
  // Hosts with room, fastest first: a task only looks as far as a host fast enough to pay.
  const withRoom = state.hosts
    .filter((host) => (capacity.get(host.name)?.slotsFree ?? 0) > 0)
    .sort((a, b) => b.facts.speed - a.facts.speed);
  if (withRoom.length === 0) return [];
  const candidates: { task: RunningTaskView; current: HostView; targets: HostView[]; move: MoveEstimate }[] =
    [];
  // The hosts with room that a batch's tasks may move to, fastest first: the same for every task of
  // the batch (its requirements and its need are in the key; no room is taken before the moves are
  // chosen), so worked out once a batch and once a job object, not once a task.
  const fittingByKey = new Map<string, HostView[]>();
  const fittingByJob = new Map<FeasibilityJob, HostView[]>();
  const fittingFor = (job: RunningTaskView["job"]): HostView[] => {
    let fitting = fittingByJob.get(job);
    if (fitting) return fitting;
    const key = batchKey(job);
    fitting = fittingByKey.get(key);
    if (!fitting) {
      const feasible = new Set(feasibleFor(job).map((host) => host.name));
      fitting = withRoom.filter(
        (host) => feasible.has(host.name) && fitsCapacity(job, capacity.get(host.name)!),
      );
      fittingByKey.set(key, fitting);
    }
    fittingByJob.set(job, fitting);
    return fitting;
  };
  for (const task of running) {
    const current = hosts.get(task.host);
    if (!current || notMovable(task, state.now, policy) !== null) continue;
    const needed = speedNeeded(current.facts.speed, policy.rescheduleGain);
    if (withRoom[0].facts.speed <= needed) {
      trace.rescheduling?.(task, []);
      continue;
    }
    const targets: HostView[] = [];
    for (const host of fittingFor(task.job)) {
      if (host.facts.speed <= needed) break;
      targets.push(host);
    }
    const move = bestMove(task, current, targets, state.now, policy);
    if (trace.rescheduling) {
      const estimates = targets.flatMap((host) => {
        const there = bestMove(task, current, [host], state.now, policy);
        return there ? [{ host: there.host, gain: there.gain }] : [];
      });
      trace.rescheduling(task, estimates);
    }
    if (move && move.gain > policy.rescheduleGain) candidates.push({ task, current, targets, move });
  }
  // The largest gains first; a task whose best host filled up meanwhile takes the best one left.
  candidates.sort((a, b) => b.move.gain - a.move.gain);
  const stops: StopEntry[] = [];
  for (const candidate of candidates) {
    const { task } = candidate;
    let move: MoveEstimate | null = candidate.move;
    if (!fitsCapacity(task.job, capacity.get(move.host)!)) {
      const left = candidate.targets.filter((host) => fitsCapacity(task.job, capacity.get(host.name)!));
      move = bestMove(task, candidate.current, left, state.now, policy);
      if (!move || move.gain <= policy.rescheduleGain) continue;
    }
    const room = capacity.get(move.host)!;
    takeRoom(room, task.job);
    stops.push({
      jobId: task.job.id,
      taskIndex: task.taskIndex,
      attempt: task.attempt,
      intent: { outcome: "migrated", reason: { kind: "rescheduled", host: move.host, gain: move.gain } },
      migrateTo: { to: move.host },
      note: {
        kind: "reschedule",
        data: {
          task: task.taskIndex,
          attempt: task.attempt,
          from: task.host,
          to: move.host,
          gain: move.gain,
          remainingHere: move.remainingHere,
          remainingThere: move.remainingThere,
          costSeconds: move.costSeconds,
        },
      },
    });
  }
  return stops;
}
