// A job's state follows its tasks; when it changes, the history says so, and a job that ended
// may release (or cancel) the jobs that depend on it. Jobs waiting on its tasks one by one
// (`tasks: same`) look again whenever it is refreshed. A dependent whose waiting tasks went or
// were cancelled (dependencies.ts) is refreshed in turn, before the next one looks: a job's end
// goes down its dependents as far as it reaches.

import { deriveJobState } from "../../../common/model/job-state.ts";
import { isEndedState } from "../../../common/model/states.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { settleWaiting } from "./dependencies.ts";

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

/** A job ended: the jobs waiting on it go, or are cancelled when they can never run. */
function releaseDependents(step: Step, ended: JobEntry): void {
  const dependents = step.state.dependents.get(ended.id);
  for (const job of dependents ? [...dependents] : []) {
    if (job === ended || job.isEnded()) continue;
    // Only a job with a task waiting may go on: counts.pending counts waiting tasks with the pending
    // ones (model/job-state.ts), `pending` the pending ones alone. A running job may have some: a
    // task retried while others of its job run waits again for the job's dependencies.
    if (job.counts.pending === job.pending.size) continue;
    if (settleWaiting(step, job, ended)) refreshJobState(step, job);
  }
  step.schedule = true;
}

/** Tasks of a job changed: jobs waiting on its tasks one by one (`tasks: same`) look again. */
function releaseSameTaskDependents(step: Step, job: JobEntry): void {
  const dependents = step.state.sameTaskDependents.get(job.id);
  if (!dependents) return;
  for (const dependent of [...dependents])
    if (!dependent.isEnded() && settleWaiting(step, dependent)) refreshJobState(step, dependent);
}
