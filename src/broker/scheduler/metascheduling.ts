// The stages that stop running work, after the placements of a pass: preemption for the first
// blocked jobs in queue order (at most one stop a pass, GrADS takes one new job at a time), then
// rescheduling of running tasks into the room left over. Both return plan entries with the
// numbers behind them for the job's events. A preemption names the task it makes room for, whose
// room is then kept for it (plan.ts).

import { DEFAULT_QOS } from "../../common/model/qos-name.ts";
import { batchKey } from "./batches.ts";
import { type Preemption, taskKey } from "./plan.ts";
import type { MetaschedulingPolicy } from "./policy.ts";
import type { FeasibilityJob } from "./stages/feasibility.ts";
import { type Capacity, fitsCapacity, takeRoom } from "./stages/fit.ts";
import { decidePreemption } from "./stages/preemption.ts";
import { bestMove, type MoveEstimate, notMovable, speedNeeded } from "./stages/rescheduling.ts";
import { throttleAllows } from "./stages/throttle.ts";
import type { HostView, JobView, PassTrace, RunningTaskView, SchedulerState, StopEntry } from "./view.ts";

/** Blocked jobs looked at in one pass: the first in queue order matter, and a pass must stay short. */
export const PREEMPTION_JOBS_PER_PASS = 8;
/** How soon to look again while waiting for a task expected to end. */
export const PREEMPTION_RECHECK_MS = 1000;

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

/** The running task last in the order of tier priority, then job priority (null when none: nothing to preempt). */
function lowestRanked(running: readonly RunningTaskView[]): Keyed | null {
  let lowest: Keyed | null = null;
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

export function preemptionPass(
  state: SchedulerState,
  placed: ReadonlySet<string>,
  feasibleFor: (job: FeasibilityJob) => HostView[],
  capacity: ReadonlyMap<string, Capacity>,
  running: () => readonly RunningTaskView[],
  policy: MetaschedulingPolicy,
  trace: PassTrace = {},
  /** Why a job must wait for a running limit of its tier or group (qos.ts), or null: such a job preempts nothing. */
  held: (job: JobView) => string | null = () => null,
): { preempt: Preemption[]; stop: StopEntry[]; recheckAt?: number } {
  const reserved = new Set((state.reserved ?? []).map((room) => taskKey(room.job.id, room.taskIndex)));
  let lowest: Keyed | null | undefined;
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

export function reschedulingPass(
  state: SchedulerState,
  feasibleFor: (job: FeasibilityJob) => HostView[],
  capacity: Map<string, Capacity>,
  running: readonly RunningTaskView[],
  policy: MetaschedulingPolicy,
  trace: PassTrace = {},
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
