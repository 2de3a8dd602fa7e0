// Applies a plan, whoever made it (a scheduling pass, a user's cancel, hold or migrate): each entry
// is checked again against the state as it is now, since the plan may be older than the last
// event; what still holds is changed in the state and committed, and the agents hear of it only
// once the commit is done (the reactor performs the effects after the commit).

import { newAttempt } from "../model/new-records.ts";
import type { AttemptRecord } from "../model/records.ts";
import { startMessage, stopAttempt } from "../reactor/handlers/attempts.ts";
import { rankStartMessage } from "../reactor/handlers/gangs.ts";
import { refreshJobState } from "../reactor/handlers/job-state.ts";
import type { Step } from "../reactor/step.ts";
import type { Placement, Plan, StopEntry } from "../scheduler/view.ts";
import type { JobEntry } from "../state/job-entry.ts";
import { applyReplica } from "./apply-replica.ts";

export interface AppliedPlan {
  started: AttemptRecord[];
  stopped: AttemptRecord[];
}

export function applyPlan(step: Step, plan: Plan): AppliedPlan {
  const applied: AppliedPlan = { started: [], stopped: [] };
  const touched = new Set<JobEntry>();
  for (const entry of plan.stop) {
    const attempt = applyStop(step, entry);
    if (attempt) applied.stopped.push(attempt);
  }
  for (const placement of plan.place) {
    const placed = placement.replica ? applyReplica(step, placement) : applyPlacement(step, placement);
    if (!placed) continue;
    applied.started.push(placed.attempt);
    touched.add(placed.job);
  }
  for (const job of touched) refreshJobState(step, job);
  return applied;
}

function applyStop(step: Step, entry: StopEntry): AttemptRecord | null {
  const live = step.state.liveAttempt(entry.jobId, entry.taskIndex, entry.attempt);
  if (!live || live.attempt.state === "stopping") return null;
  if (entry.migrateTo) {
    const task = live.job.tasks[entry.taskIndex];
    live.job.setMigration(task, { to: entry.migrateTo.to, from: live.attempt.host });
    step.change({ op: "putTasks", tasks: [task] });
    step.state.movedAt.set(`${entry.jobId}/${entry.taskIndex}`, step.now);
  }
  if (entry.madeRoomFor !== undefined) {
    const waiting = step.state.preemptionsFor;
    waiting.set(entry.madeRoomFor, (waiting.get(entry.madeRoomFor) ?? 0) + 1);
  }
  stopAttempt(step, live.job, live.attempt, entry.intent);
  if (entry.note) step.event(live.job, entry.note);
  return live.attempt;
}

/** A placement still holds when the task is pending and ready and the host can take it. */
function applyPlacement(step: Step, placement: Placement): { job: JobEntry; attempt: AttemptRecord } | null {
  const { state, now } = step;
  const job = state.jobs.get(placement.jobId);
  const host = state.hosts.get(placement.host);
  if (!job || !host || !job.schedulable) return null;
  const task = job.tasks[placement.taskIndex];
  if (task?.state !== "pending" || !job.ready.has(task.index)) return null;
  const ranks = placement.ranks ?? [placement.host];
  const perHost = new Map<string, number>();
  for (const name of ranks) perHost.set(name, (perHost.get(name) ?? 0) + 1);
  for (const [name, count] of perHost) {
    const rankHost = state.hosts.get(name);
    if (rankHost?.record.state !== "ready" || !rankHost.connected) return null;
    if (rankHost.record.slots - rankHost.usedSlots < job.cpus * count) return null;
    if (rankHost.record.facts.memoryMb - rankHost.usedMemoryMb < job.memoryMb * count) return null;
  }
  task.attempts += 1;
  task.notBefore = null;
  const migration = task.migration;
  job.setMigration(task, null);
  const attempt = newAttempt(task, ranks, now);
  state.setTaskState(job, task, "running");
  job.addAttempt(attempt);
  const live = state.activate(job, attempt);
  const preempted = state.preemptionsFor.get(job.id) ?? 0;
  if (preempted > 0) {
    live.startedByPreemption = true;
    if (preempted === 1) state.preemptionsFor.delete(job.id);
    else state.preemptionsFor.set(job.id, preempted - 1);
  }
  step.change({ op: "putTasks", tasks: [task] });
  step.change({ op: "putAttempt", attempt });
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
    ranks.length > 1 ? rankStartMessage(step, job, attempt, 0, null) : startMessage(job, attempt);
  step.effect({ kind: "send", host: ranks[0], message });
  return { job, attempt };
}
