// An update of a job not yet running (`steward update`): which jobs may take which fields
// (model/job-update.ts's updateRefusal), the new job file checked as a submit checks a new one,
// then the job file replaced, the job's place in the queue moved, an `updated` event naming who
// changed what, and a scheduling pass, as after a submit.

import type { JobSpec } from "../../../common/model/job-spec.ts";
import {
  type JobUpdate,
  type UpdateFacts,
  updateChanges,
  updatedFields,
  updatedSpec,
  updateRefusal,
} from "../../../common/model/job-update.ts";
import type { ClusterState } from "../../state/cluster-state.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import { ConflictError } from "../errors.ts";
import type { Step } from "../step.ts";
import { findJob } from "./control.ts";
import { admitSpec } from "./submit.ts";

export interface UpdateRequest {
  id: string;
  /** Already shaped by parseJobUpdate: known fields, at least one. */
  update: JobUpdate;
  /** Who asks (the event names them). */
  by: string;
  /**
   * The QoS tiers the one who asks may give the job (their token's), as at submit; null: any (an
   * admin). Checked only when the update names a tier.
   */
  allowedQos?: readonly string[] | null;
}

/** A job's state and how many of its tasks have started, as updateRefusal reads them. */
export function updateFactsOf(job: JobEntry): UpdateFacts {
  const live = new Set<number>();
  for (const attempt of job.allLiveAttempts()) live.add(attempt.taskIndex);
  let started = 0;
  for (const task of job.tasks) if (task.attempts > 0) started++;
  return {
    id: job.id,
    state: job.record.state,
    cancelRequested: job.record.cancelRequested,
    tasks: job.tasks.length,
    liveTasks: live.size,
    startedTasks: started,
  };
}

/**
 * The job file after the update, checked as a submit checks a new one (validateJobSpec: the same
 * fields, CEL checks and cost limits, the same messages). The one place an updated job file is
 * admitted: checks a submit makes against the state (a QoS tier, a quota) belong here too.
 * Throws JobFileError (400) naming the field.
 */
export function admitUpdatedSpec(
  state: ClusterState,
  job: JobEntry,
  update: JobUpdate,
  allowedQos: readonly string[] | null = null,
): JobSpec {
  // As at submit: a new tier the one who asks may not use is refused naming those they may; the
  // limits of the tier and the owner's group, the job's own tasks left out of its owner's queued
  // count; a job left without a time limit gets the tier's. Its workdir, which no update
  // changes, is not held against the folders the hosts share now: it waits as it did.
  return admitSpec(state, updatedSpec(job.record.spec, update), job.owner, allowedQos, {
    checkTier: update.qos !== undefined,
    checkWorkdir: false,
    checkCredentials: false,
    leaving: job,
  });
}

/**
 * Updates a job none of whose tasks runs (or an array's priority while some run): answers the job,
 * unchanged when the update changes nothing. Refused with a ConflictError (409) naming the job's
 * state, or a JobFileError (400) as a submit of the new job file would be.
 */
export function updateJob(step: Step, { id, update, by, allowedQos = null }: UpdateRequest): JobEntry {
  const job = findJob(step, id);
  const fields = updatedFields(update);
  const refusal = updateRefusal(updateFactsOf(job), fields);
  if (refusal) throw new ConflictError(refusal);
  const spec = admitUpdatedSpec(step.state, job, update, allowedQos);
  const { record } = job;
  const requirements = record.dynamicRequirements ?? record.spec.requirements ?? null;
  const changes = updateChanges({ spec: record.spec, priority: record.priority, requirements }, spec, fields);
  if (changes.length === 0) return job;
  const changed = new Set(changes.map((change) => change.field));
  // Requirements the job wrote for itself give way to those its owner gives now.
  const dynamic = changed.has("requirements") ? null : record.dynamicRequirements;
  step.write.replaceJobSpec(job, spec, dynamic);
  // Tasks not started whose memory grew after running out of it take the memory given now (a
  // task is never `held`: a hold is its job's flag).
  if (changed.has("resources.memoryMb")) {
    const grown = job.tasks.filter(
      (task) => task.memoryMb !== null && (task.state === "pending" || task.state === "waiting"),
    );
    if (grown.length > 0) step.write.updateTasks(job, grown, { memoryMb: null });
  }
  // Room a preemption kept was sized and chosen for the job as it was: the next pass chooses again.
  step.state.reservations.forgetJob(job.id);
  step.event(job, { kind: "updated", data: { by, changes } });
  // Its place in the queue moved with the job file (replaceJobSpec); a job with pending tasks is
  // always queued (state/job-queue.ts lets go only of jobs without pending work).
  step.schedule = true;
  return job;
}
