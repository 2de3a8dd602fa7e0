// A job's state follows its tasks; when it changes, the history says so, and a job that ended
// may release (or fail) the jobs that depend on it.

import { deriveJobState } from "../../../common/model/job-state.ts";
import { isEndedState } from "../../../common/model/states.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { releaseDependents } from "./dependencies.ts";

export function refreshJobState(step: Step, job: JobEntry): void {
  const state = deriveJobState({
    counts: job.counts,
    held: job.record.held,
    dependenciesMet: step.state.dependenciesMet(job.record.spec.dependsOn),
  });
  if (state === job.record.state) return;
  const from = job.record.state;
  step.write.updateJob(job, isEndedState(state) ? { state, endedAt: step.now } : { state });
  step.event(job, { kind: "state", data: { from, to: state } });
  step.effect({ kind: "jobChanged", job });
  if (isEndedState(state)) releaseDependents(step, job);
}
