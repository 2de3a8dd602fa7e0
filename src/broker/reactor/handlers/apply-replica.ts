// Applies a replica placement (scheduler/stages/replicas.ts): one more attempt of a task that is
// running already. Checked again against the state as it is now: the task still runs, nothing of
// it is being stopped, it has fewer than k live attempts (and budget left), and the host is free
// and runs no attempt of it (room a preemption keeps for another task is not free). The task stays
// `running` and is counted once.

import { hostsOf } from "../../../common/model/ids.ts";
import { newAttempt } from "../../../common/model/new-records.ts";
import type { AttemptRecord } from "../../../common/model/records.ts";
import type { ReplicaPlacement } from "../../scheduler/plan.ts";
import { assignGpus, customFits } from "../../state/device-assignment.ts";
import { freeCustom, freeGpus } from "../../state/host-entry.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { startMessage } from "./attempts.ts";
import { withStartSecrets } from "./start-secrets.ts";

export function applyReplica(
  step: Step,
  placement: ReplicaPlacement,
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
  const room = state.roomFor(placement.host, job.id, task.index);
  if (room.slots < job.cpus || room.memoryMb < (task.memoryMb ?? job.memoryMb)) return null;
  if (!customFits(job.custom, 1, freeCustom(host))) return null;
  const devices = assignGpus([{ host: placement.host, rank: 0 }], job.gpus ?? 0, () => freeGpus(host));
  if (!devices) return null;
  step.write.updateTask(job, task, { attempts: task.attempts + 1 });
  const attempt = newAttempt(task, placement.host, now);
  attempt.placement = devices;
  step.write.addAttempt(job, attempt);
  const replica = live.length + 1;
  step.event(job, {
    kind: "replica.placed",
    data: { task: task.index, attempt: attempt.number, host: attempt.host, replica, replicas: job.replicas },
  });
  const message = withStartSecrets(startMessage(job, attempt), job, step.state.secrets);
  step.effect({ kind: "send", host: placement.host, message });
  return { job, attempt };
}
