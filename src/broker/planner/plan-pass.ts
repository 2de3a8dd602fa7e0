// One scheduling pass over the cluster state: the scheduler sees the queued jobs with ready work,
// the hosts, each owner's share, the room preemptions keep, and (when it may stop work:
// preemption, rescheduling) the live attempts, and answers a plan; null when there is nothing to
// do. Explain hands the scheduler the same input (passInput) and runs it dry (explain-job.ts).

import { rankedAtOrBelow } from "../scheduler/metascheduling.ts";
import type { Plan } from "../scheduler/plan.ts";
import { schedule } from "../scheduler/schedule.ts";
import type { MetaschedulingPolicy, RunningTaskView, SchedulerState } from "../scheduler/view.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import type { LiveAttempt } from "../state/host-entry.ts";
import { replicableTasks } from "./running-tasks.ts";

export function planPass(
  state: ClusterState,
  now: number,
  policy: Partial<MetaschedulingPolicy> = {},
): Plan | null {
  state.promoteDueBackoffs(now);
  state.dropStaleReservations();
  const input = passInput(state, now, policy);
  if (!input) return null;
  // Only a queued job ranked above some running task may preempt (queueOutranksRunning); otherwise the
  // preemption stage would stop at the first job, after making a view of every running task.
  // (Explain keeps the stage: a draft it looks at may rank above what the queue holds.)
  const idle = input.running !== undefined && input.policy?.preempt !== false && !queueOutranksRunning(state);
  const plan = schedule(idle ? { ...input, policy: { ...input.policy, preempt: false } } : input);
  const empty =
    plan.place.length === 0 &&
    plan.stop.length === 0 &&
    plan.preempt.length === 0 &&
    plan.recheckAt === undefined;
  return empty ? null : plan;
}

/**
 * What a pass over the state as it is now hands the scheduler, or null when it could change
 * nothing (then the queue is not walked). Reads the state only.
 */
export function passInput(
  state: ClusterState,
  now: number,
  policy: Partial<MetaschedulingPolicy> = {},
): SchedulerState | null {
  const freeSlot = state.hasFreeSlot();
  // Without a free slot or live work, nothing can be placed, stopped or moved: the queue is not walked.
  if (!freeSlot && state.live.size === 0) return null;
  // Without a free slot only a preemption could change anything, and only a queued job of a higher
  // priority than some running task could make one: a long queue is not walked at every submit.
  if (!freeSlot && (policy.preempt === false || !queueOutranksRunning(state))) return null;
  // Read lazily: a pass looks no further into the queue than it places (state/job-queue.ts).
  const jobs = state.queue.readyJobs();
  const queued = state.queue.hasReady();
  const preempting = policy.preempt !== false && queued && state.live.size > 0;
  const rescheduling = policy.reschedule !== false && freeSlot && state.live.size > 0;
  // Running tasks that may take idle slots as replicas (stages/replicas.ts).
  const replicable = freeSlot ? replicableTasks(state) : [];
  // Nothing can be placed without a free slot, and nothing moved or preempted without live work.
  if (!(freeSlot && (queued || replicable.length > 0)) && !preempting && !rescheduling) return null;
  const reserved = state.reservations.size > 0 ? state.reservedRooms() : [];
  const runningUse = state.runningUse();
  return {
    now,
    jobs,
    ownerQueues: () => state.queue.ownerQueues(),
    hosts: state.hostViews(now, policy.walltimeMarginSeconds),
    owners: state.owners.shares(now),
    qos: state.qos,
    ...(runningUse ? { runningUse } : {}),
    replicable,
    ...(reserved.length > 0 ? { reserved } : {}),
    // What the hosts' caches hold, for the data affinity of jobs with input digests.
    ...(state.cacheHolders.hosts > 0 ? { cached: state.cacheHolders.byDigest } : {}),
    running: preempting || rescheduling ? () => runningViews(state) : undefined,
    policy: {
      ...policy,
      ...(state.transferBytesPerSecond ? { transferBytesPerSecond: state.transferBytesPerSecond } : {}),
    },
  };
}

/**
 * Whether the queue's first job is above some running task in tier priority, then job priority:
 * the one condition for any preemption, since every task a job may preempt is below it
 * (scheduler/qos.ts mayPreempt), and the queue is in that order.
 */
function queueOutranksRunning(state: ClusterState): boolean {
  const top = state.queue.top();
  if (top === null) return false;
  for (const job of state.liveJobs.keys()) if (!rankedAtOrBelow(top, job)) return true;
  return false;
}

function runningViews(state: ClusterState): RunningTaskView[] {
  const views: RunningTaskView[] = [];
  // A gang is not preempted or moved rank by rank: preemption and rescheduling leave it alone.
  for (const live of state.live.values()) if (!live.gang) views.push(runningView(state, live));
  return views;
}

/** A live attempt as the scheduler sees it (preemption, rescheduling, explain). */
export function runningView(state: ClusterState, live: LiveAttempt): RunningTaskView {
  const { job, attempt } = live;
  const checkpoint = job.tasks[attempt.taskIndex].checkpoint;
  return {
    job,
    taskIndex: attempt.taskIndex,
    attempt: attempt.number,
    host: attempt.host,
    stopping: attempt.state === "stopping",
    progress: {
      startedAt: attempt.startedAt,
      baseline: live.progress?.baseline ?? null,
      last: live.progress?.last ?? null,
    },
    checkpointBytes: checkpoint ? checkpoint.bytes : null,
    startedByPreemption: live.startedByPreemption === true,
    lastMovedAt: state.movedAt.get(`${job.id}/${attempt.taskIndex}`) ?? null,
  };
}
