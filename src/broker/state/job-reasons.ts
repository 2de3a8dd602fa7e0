// What keeps a job's tasks from starting, before any host is looked at (the first part of explain).

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
  const unmet = record.spec.dependsOn.filter((dependency) => state.jobState(dependency) !== "succeeded");
  if (unmet.length) {
    const states = unmet.map(
      (dependency) =>
        `${dependency} (${canSee(dependency) ? (state.jobState(dependency) ?? "removed") : "another user's job"})`,
    );
    reasons.push(
      `waiting for ${unmet.length === 1 ? "its dependency" : "dependencies"} ${states.join(", ")} to succeed`,
    );
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
  if (job.pending.size === 0 && job.counts.running > 0) reasons.push("every task that can run is running");
  return reasons;
}
