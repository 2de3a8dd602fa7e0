// Applies a replica placement (scheduler/stages/replicas.ts): one more attempt of a task that is
// running already. Checked again against the state as it is now: the task still runs, nothing of
// it is being stopped, it has fewer than k live attempts (and budget left), and the host is free
// and runs no attempt of it. The task stays `running` and is counted once.

import { hostsOf } from "../model/ids.ts";
import { newAttempt } from "../model/new-records.ts";
import type { AttemptRecord } from "../model/records.ts";
import { startMessage } from "../reactor/handlers/attempts.ts";
import type { Step } from "../reactor/step.ts";
import type { Placement } from "../scheduler/view.ts";
import type { JobEntry } from "../state/job-entry.ts";

export function applyReplica(
  step: Step,
  placement: Placement,
): { job: JobEntry; attempt: AttemptRecord } | null {
  const { state, now } = step;
  const job = state.jobs.get(placement.jobId);
  const host = state.hosts.get(placement.host);
  if (!job || !host || job.record.held || job.record.cancelRequested) return null;
  const task = job.tasks[placement.taskIndex];
  if (task?.state !== "running") return null;
  const live = job.liveAttempts(task.index);
  if (live.some((attempt) => attempt.state === "stopping")) return null;
  if (!job.mayReplicate(task.index, live.length)) return null;
  if (live.some((attempt) => hostsOf(attempt).includes(placement.host))) return null;
  if (host.record.state !== "ready" || !host.connected) return null;
  if (host.record.slots - host.usedSlots < job.cpus) return null;
  if (host.record.facts.memoryMb - host.usedMemoryMb < job.memoryMb) return null;
  task.attempts += 1;
  const attempt = newAttempt(task, placement.host, now);
  job.addAttempt(attempt);
  state.activate(job, attempt);
  step.change({ op: "putTasks", tasks: [task] });
  step.change({ op: "putAttempt", attempt });
  const replica = live.length + 1;
  step.event(job, {
    kind: "replica.placed",
    data: { task: task.index, attempt: attempt.number, host: attempt.host, replica, replicas: job.replicas },
  });
  step.effect({ kind: "send", host: placement.host, message: startMessage(job, attempt) });
  return { job, attempt };
}
