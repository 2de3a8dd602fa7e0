// The running tasks a scheduling pass may give replicas (scheduler/stages/replicas.ts), found from
// the live attempts, which are few (at most one per busy slot), rather than from every task.

import { hostsOf } from "../../common/model/ids.ts";
import type { RunningTask } from "../scheduler/view.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import type { JobEntry } from "../state/job-entry.ts";

/**
 * Running tasks of jobs with `replicas` > 1 that may have one more attempt now: the job is not held
 * or being cancelled, and no attempt of the task is being stopped (a stop decides what comes next).
 */
export function replicableTasks(state: ClusterState): RunningTask[] {
  // Most passes: no running job has replicas, and its live attempts are not looked at one by one.
  let replicated = false;
  for (const job of state.liveJobs.keys())
    if (job.replicas > 1) {
      replicated = true;
      break;
    }
  if (!replicated) return [];
  const tasks = new Map<string, { job: JobEntry; taskIndex: number; hosts: string[]; stopping: boolean }>();
  for (const { job, attempt } of state.live.values()) {
    if (job.replicas <= 1) continue;
    const key = `${job.id}\u0000${attempt.taskIndex}`;
    let task = tasks.get(key);
    if (!task) {
      task = { job, taskIndex: attempt.taskIndex, hosts: [], stopping: false };
      tasks.set(key, task);
    }
    task.hosts.push(...hostsOf(attempt));
    if (attempt.state === "stopping") task.stopping = true;
  }
  const running: RunningTask[] = [];
  for (const { job, taskIndex, hosts, stopping } of tasks.values()) {
    if (stopping || job.record.held || job.record.cancelRequested) continue;
    if (job.tasks[taskIndex]?.state !== "running" || !job.mayReplicate(taskIndex, hosts.length)) continue;
    running.push({ job, taskIndex, hosts });
  }
  return running;
}
