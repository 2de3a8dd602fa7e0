// The one plan applier: applies a plan, whoever made it (a scheduling pass, a user's cancel, hold
// or migrate), in one step, so its changes are committed together. Each entry is checked again
// against the state as it is now, since the plan may be older than the last event; what still
// holds is changed in the state and committed, and the agents hear of it only once the commit is
// done (the reactor performs the effects after the commit). A preemption is applied whole or not
// at all: the stop and the room kept for its task (state/room-reservations.ts).

import { attemptKey } from "../../../common/model/ids.ts";
import { newAttempt } from "../../../common/model/new-records.ts";
import type { AttemptRecord, PlacementEntry, TaskRecord } from "../../../common/model/records.ts";
import type { GangPlacement, Plan, Preemption, TaskPlacement } from "../../scheduler/plan.ts";
import { throttleAllows } from "../../scheduler/stages/throttle.ts";
import type { StopEntry } from "../../scheduler/view.ts";
import { assignGpus, customFits } from "../../state/device-assignment.ts";
import { freeCustom, freeGpus, type HostEntry, onePlacement } from "../../state/host-entry.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { RoomReservation } from "../../state/room-reservations.ts";
import type { Step } from "../step.ts";
import { applyReplica } from "./apply-replica.ts";
import { startMessage, stopAttempt } from "./attempts.ts";
import { rankStartMessage } from "./gangs.ts";
import { refreshJobState } from "./job-state.ts";
import { withStartSecrets } from "./start-secrets.ts";

export interface AppliedPlan {
  started: AttemptRecord[];
  stopped: AttemptRecord[];
  /** Room kept by the preemptions applied. */
  reserved: RoomReservation[];
}

export function applyPlan(step: Step, plan: Plan): AppliedPlan {
  const applied: AppliedPlan = { started: [], stopped: applyStops(step, plan.stop), reserved: [] };
  const touched = new Set<JobEntry>();
  for (const preemption of plan.preempt) {
    const done = applyPreemption(step, preemption);
    if (!done) continue;
    applied.stopped.push(done.stopped);
    applied.reserved.push(done.reserved);
  }
  for (const placement of plan.place) {
    const placed =
      placement.kind === "replica" ? applyReplica(step, placement) : applyPlacement(step, placement);
    if (!placed) continue;
    applied.started.push(placed.attempt);
    touched.add(placed.job);
  }
  for (const job of touched) refreshJobState(step, job);
  return applied;
}

/** Applies stops alone (a user's cancel, hold or migrate; a contract or a walltime): the attempts asked to stop. */
export function applyStops(step: Step, stops: readonly StopEntry[]): AttemptRecord[] {
  const stopped: AttemptRecord[] = [];
  for (const entry of stops) {
    const attempt = applyStop(step, entry);
    if (attempt) stopped.push(attempt);
  }
  return stopped;
}

/**
 * Stops the victim and keeps its room for the task, both or neither: the task must still wait,
 * ready, with no room kept for it yet, and the victim must still run on the host named.
 */
function applyPreemption(
  step: Step,
  { stop, place }: Preemption,
): { stopped: AttemptRecord; reserved: RoomReservation } | null {
  const { state } = step;
  const job = state.jobs.get(place.jobId);
  if (!job?.schedulable || !job.ready.has(place.taskIndex)) return null;
  if (job.tasks[place.taskIndex]?.state !== "pending") return null;
  if (state.reservations.get(place.jobId, place.taskIndex)) return null;
  const victim = state.liveAttempt(stop.jobId, stop.taskIndex, stop.attempt);
  if (!victim || victim.attempt.state === "stopping" || victim.attempt.host !== place.host) return null;
  const stopped = applyStop(step, stop);
  if (!stopped) return null;
  const reserved: RoomReservation = {
    jobId: job.id,
    taskIndex: place.taskIndex,
    host: place.host,
    cpus: job.cpus,
    memoryMb: job.memoryMb,
    stopped: attemptKey(stop.jobId, stop.taskIndex, stop.attempt),
  };
  state.reservations.add(reserved);
  step.onRollback(() => state.reservations.delete(reserved.jobId, reserved.taskIndex));
  return { stopped, reserved };
}

function applyStop(step: Step, entry: StopEntry): AttemptRecord | null {
  const live = step.state.liveAttempt(entry.jobId, entry.taskIndex, entry.attempt);
  if (!live || live.attempt.state === "stopping") return null;
  if (entry.migrateTo) {
    const task = live.job.tasks[entry.taskIndex];
    step.write.updateTask(live.job, task, { migration: { to: entry.migrateTo.to, from: live.attempt.host } });
    const key = `${entry.jobId}/${entry.taskIndex}`;
    const movedAt = step.state.movedAt.get(key);
    step.state.movedAt.set(key, step.now);
    step.onRollback(() => {
      if (movedAt === undefined) step.state.movedAt.delete(key);
      else step.state.movedAt.set(key, movedAt);
    });
  }
  stopAttempt(step, live.job, live.attempt, entry.intent);
  if (entry.note) step.event(live.job, entry.note);
  return live.attempt;
}

/**
 * Whether the host takes `count` ranks of the task now: ready, attached, with their slots, memory
 * and countable resources free, counting as free no room kept for another task.
 */
function hostTakes(
  state: Step["state"],
  host: HostEntry | undefined,
  job: JobEntry,
  task: TaskRecord,
  count: number,
): boolean {
  if (host?.record.state !== "ready" || !host.connected) return false;
  const room = state.roomFor(host.record.name, job.id, task.index);
  const memoryMb = task.memoryMb ?? job.memoryMb;
  if (room.slots < job.cpus * count || room.memoryMb < memoryMb * count) return false;
  return job.custom === undefined || customFits(job.custom, count, freeCustom(host));
}

/**
 * A placement still holds when the task is pending and ready and the hosts can take it, counting
 * as free no room kept for another task.
 */
function applyPlacement(
  step: Step,
  placement: TaskPlacement | GangPlacement,
): { job: JobEntry; attempt: AttemptRecord } | null {
  const { state, now } = step;
  const job = state.jobs.get(placement.jobId);
  const host = state.hosts.get(placement.host);
  if (!job || !host || !job.schedulable) return null;
  const task = job.tasks[placement.taskIndex];
  if (task?.state !== "pending" || !job.ready.has(task.index)) return null;
  // An array at its throttle (its live tasks count each placement applied before this one).
  if (!throttleAllows(job)) return null;
  const ranks = placement.kind === "gang" ? placement.ranks : [placement.host];
  if (ranks.length === 1) {
    if (!hostTakes(state, host, job, task, 1)) return null;
  } else {
    const perHost = new Map<string, number>();
    for (const name of ranks) perHost.set(name, (perHost.get(name) ?? 0) + 1);
    for (const [name, count] of perHost)
      if (!hostTakes(state, state.hosts.get(name), job, task, count)) return null;
  }
  // One host's placement without devices is the host's shared one; devices are named per rank.
  let placed: PlacementEntry[] | null =
    ranks.length === 1 && !job.gpus ? onePlacement(host) : ranks.map((name, rank) => ({ host: name, rank }));
  if (job.gpus) placed = assignGpus(placed, job.gpus, (name) => freeGpus(state.hosts.get(name)!));
  if (!placed) return null;
  const migration = task.migration;
  // Waiting since its job's submit, or its last attempt's end (or the back-off after it).
  const previous = task.attempts > 0 ? job.attempt(task.index, task.attempts) : undefined;
  const readySince = Math.max(previous?.endedAt ?? job.record.createdAt, task.notBefore ?? 0);
  step.write.updateTask(job, task, {
    attempts: task.attempts + 1,
    notBefore: null,
    migration: null,
    state: "running",
  });
  const attempt = newAttempt(task, ranks, now);
  attempt.placement = placed;
  const live = step.write.addAttempt(job, attempt);
  // A task a preemption kept room for starts (there, or sooner elsewhere): its room is given back.
  const reservation = state.reservations.get(job.id, task.index);
  if (reservation) {
    state.reservations.delete(job.id, task.index);
    step.onRollback(() => state.reservations.add(reservation));
    live.startedByPreemption = true;
  }
  const data = { task: task.index, attempt: attempt.number, host: attempt.host };
  if (attempt.number > 1) {
    step.event(job, {
      kind: "restart",
      data: {
        ...data,
        checkpoint: task.checkpoint?.generation ?? null,
        checkpointBytes: task.checkpoint?.bytes ?? null,
        ...(migration ? { migration } : {}),
        array: job.tasks.length > 1,
      },
    });
  } else if (job.tasks.length === 1) {
    step.event(job, { kind: "attempt.placed", data });
  }
  // A gang starts with rank 0, whose agent finds the coordinator's port (handlers/gangs.ts).
  const message =
    ranks.length > 1
      ? rankStartMessage(step, job, attempt, 0, null)
      : withStartSecrets(startMessage(job, attempt), job, step.state.secrets);
  step.effect({ kind: "send", host: ranks[0], message });
  step.effect({
    kind: "placed",
    placed: {
      jobId: job.id,
      taskIndex: task.index,
      attempt: attempt.number,
      host: attempt.host,
      waitedMs: Math.max(0, now - readySince),
    },
  });
  return { job, attempt };
}
