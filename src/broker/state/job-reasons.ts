// What keeps a job's tasks from starting, before any host is looked at (the first part of explain).

import {
  conditionVerb,
  dependenciesOf,
  dependencyVerdict,
  describeDependency,
} from "../../common/model/dependencies.ts";
import { declaredFolders, workdirWaitReason } from "../scheduler/shared-workdir.ts";
import type { ClusterState } from "./cluster-state.ts";
import type { JobEntry } from "./job-entry.ts";

/**
 * `canSee` says whether the reader may learn a dependency's state (a user: their own jobs only);
 * another's dependency is named (its id is in the job file) but its state is not told.
 */
export function jobReasons(
  state: ClusterState,
  job: JobEntry,
  now: number,
  canSee: (dependency: string) => boolean = () => true,
): string[] {
  const reasons: string[] = [];
  const { record } = job;
  if (job.isEnded()) return [`the job has ended: ${record.state}`];
  if (record.cancelRequested) reasons.push("cancel was requested: nothing starts again");
  if (record.held) reasons.push("held by a user: `steward release` puts it back in the queue");
  const seen = (id: string) => (canSee(id) ? (state.jobState(id) ?? "removed") : "another user's job");
  const dependencies = dependenciesOf(record.spec.dependsOn);
  // A job id alone (wait for it to succeed): named together, as they always were.
  const unmet = dependencies
    .filter((each) => !each.sameTasks && each.when === "succeeded")
    .map((each) => each.job)
    .filter((dependency) => state.jobState(dependency) !== "succeeded");
  if (unmet.length) {
    const states = unmet.map((dependency) => `${dependency} (${seen(dependency)})`);
    reasons.push(
      `waiting for ${unmet.length === 1 ? "its dependency" : "dependencies"} ${states.join(", ")} to succeed`,
    );
  }
  let waitingTasks = -1;
  for (const dependency of dependencies) {
    if (!dependency.sameTasks && dependency.when === "succeeded") continue;
    if (dependency.sameTasks) {
      if (waitingTasks < 0) waitingTasks = job.tasks.filter((task) => task.state === "waiting").length;
      if (waitingTasks === 0) continue;
      const count = `${waitingTasks} task${waitingTasks === 1 ? "" : "s"}`;
      reasons.push(
        `${count} wait${waitingTasks === 1 ? "s" : ""} for the same tasks of job ${dependency.job} (${seen(dependency.job)}) ` +
          `to ${conditionVerb(dependency.when)}, task by task`,
      );
      continue;
    }
    if (dependencyVerdict(dependency.when, state.jobState(dependency.job)) !== "wait") continue;
    reasons.push(`waits for ${describeDependency(dependency)} (${seen(dependency.job)})`);
  }
  let backingOff = 0;
  let until = 0;
  for (const index of job.pending) {
    const notBefore = job.tasks[index].notBefore;
    if (notBefore !== null && notBefore > now) {
      backingOff++;
      until = Math.max(until, notBefore);
    }
  }
  if (backingOff) {
    const seconds = ((until - now) / 1000).toFixed(1);
    reasons.push(
      `${backingOff} task${backingOff === 1 ? "" : "s"} back off after a failure (the last for ${seconds} s more)`,
    );
  }
  for (const task of job.tasks) {
    const rule = task.migration;
    if (rule)
      reasons.push(`task ${task.index} is migrating ${rule.to ? `to ${rule.to}` : `away from ${rule.from}`}`);
  }
  if (job.pending.size > 0 && record.spec.workdir !== undefined) {
    const outside = workdirWaitReason(
      record.spec.workdir,
      declaredFolders(state.hosts.values(), state.poolFolders),
    );
    if (outside) reasons.push(outside);
  }
  if (job.pending.size === 0 && job.counts.running > 0) reasons.push("every task that can run is running");
  return reasons;
}
