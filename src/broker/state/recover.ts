// Rebuilds the cluster state from the store at start (GridWay's gw_job_recover). Hosts come back
// unattached with a fresh lease: they get one host timeout to re-attach before they count as lost.
// Ended jobs come back as headers only (state/job-header.ts): from the store's loadLive they come
// as headers already, with fair share's history as sums; from a full load they are retired here.
// Checkpoint parts come back to their tasks (state/task-checkpoints.ts).

import { measuredCpuSeconds } from "../../common/model/attempt-usage.ts";
import { restartPlanOfEnded } from "../../common/model/gang.ts";
import { hostsOf, isLive } from "../../common/model/ids.ts";
import { DEFAULT_QOS_POLICY, type QosPolicy } from "../../common/model/qos-file.ts";
import type { TaskRecord } from "../../common/model/records.ts";
import { attemptCpuSeconds } from "../scheduler/fair-share.ts";
import type { StoreSnapshot } from "../store/store.ts";
import { ClusterState } from "./cluster-state.ts";
import { newHostEntry } from "./host-entry.ts";
import { JobEntry } from "./job-entry.ts";
import { mayRetire } from "./job-header.ts";
import type { FairShareSettings } from "./owner-usage.ts";

/** `fairShare` is set first: the half-life decays the usage as it is added back. */
export function recoverState(
  snapshot: StoreSnapshot,
  now: number,
  fairShare: Partial<FairShareSettings> = {},
  qos: QosPolicy = DEFAULT_QOS_POLICY,
): ClusterState {
  const state = new ClusterState(fairShare, qos);
  const tasksByJob = new Map<string, TaskRecord[]>();
  for (const task of snapshot.tasks) {
    const list = tasksByJob.get(task.jobId);
    if (list) list.push(task);
    else tasksByJob.set(task.jobId, [task]);
  }
  for (const [key, value] of Object.entries(snapshot.meta)) state.meta.set(key, value);
  for (const token of snapshot.tokens) state.tokens.put(token);
  for (const secret of snapshot.secrets ?? []) state.secrets.put(secret);
  for (const workflow of snapshot.workflows ?? []) state.addWorkflow(workflow);
  for (const host of snapshot.hosts) {
    const entry = newHostEntry(host, false);
    entry.lastSeen = now;
    state.hosts.set(host.name, entry);
  }
  for (const job of snapshot.jobs) {
    state.addJob(new JobEntry(job, state.nextSeq++, tasksByJob.get(job.id) ?? []));
  }
  for (const part of snapshot.checkpointParts)
    state.jobs.get(part.jobId)?.checkpointsOf(part.taskIndex).parts.push(part);
  for (const header of snapshot.ended ?? []) state.ended.set(header);
  // The usage sums cover every ended attempt, of live jobs too.
  const usageSummed = snapshot.usage !== undefined;
  for (const sample of snapshot.usage ?? [])
    state.owners.used(sample.owner, sample.cpuSeconds, sample.endedAt);
  for (const attempt of snapshot.attempts) {
    const job = state.jobs.get(attempt.jobId);
    if (!job) continue;
    job.addAttempt(attempt);
    if (isLive(attempt)) state.activate(job, attempt);
    else if (attempt.endedAt !== null && !usageSummed) {
      const held = job.cpus * hostsOf(attempt).length;
      const measured = measuredCpuSeconds(attempt.usage);
      state.owners.used(
        job.record.owner,
        attemptCpuSeconds(held, attempt.startedAt, attempt.endedAt, measured),
        attempt.endedAt,
      );
    }
  }
  for (const job of [...state.jobs.values()]) if (mayRetire(job)) state.retire(job);
  // A gang that lost a rank before the restart goes back to its healthy hosts, as it would have.
  for (const job of state.jobs.values()) {
    const last = job.gang && job.tasks[0]?.state === "pending" ? job.latestAttempt(0) : undefined;
    if (!last) continue;
    job.gangRestart = restartPlanOfEnded(last, (host) => {
      const entry = state.hosts.get(host);
      return entry !== undefined && entry.record.state !== "lost";
    });
  }
  return state;
}
