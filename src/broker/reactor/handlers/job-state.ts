// A job's state follows its tasks; when it changes, the history says so, and a job that ended
// may release (or cancel) the jobs that depend on it. Jobs waiting on its tasks one by one
// (`tasks: same`) look again whenever it is refreshed.

import { deriveJobState } from "../../../common/model/job-state.ts";
import { isEndedState } from "../../../common/model/states.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { releaseDependents, releaseSameTaskDependents } from "./dependencies.ts";

/** Whether the job waits on nothing: a task of it is pending, or none is waiting. */
function dependenciesMet(job: JobEntry): boolean {
  if (job.record.spec.dependsOn.length === 0 || job.pending.size > 0) return true;
  for (const task of job.tasks) if (task.state === "waiting") return false;
  return true;
}

export function refreshJobState(step: Step, job: JobEntry): void {
  const state = deriveJobState({
    counts: job.counts,
    held: job.record.held,
    dependenciesMet: dependenciesMet(job),
  });
  if (state !== job.record.state) {
    const from = job.record.state;
    step.write.updateJob(job, isEndedState(state) ? { state, endedAt: step.now } : { state });
    step.event(job, { kind: "state", data: { from, to: state } });
    step.effect({ kind: "jobChanged", job });
    if (isEndedState(state)) releaseDependents(step, job);
  }
  releaseSameTaskDependents(step, job);
}
