// A new job: its tasks start pending (or waiting on their dependencies).

import { type JobSpec, taskCount } from "../../../common/model/job-spec.ts";
import { newTask } from "../../../common/model/new-records.ts";
import type { JobRecord, TaskRecord } from "../../../common/model/records.ts";
import { submissionKey } from "../../state/cluster-state.ts";
import { JobEntry } from "../../state/job-entry.ts";
import { InvalidRequestError } from "../errors.ts";
import type { Step } from "../step.ts";

export interface SubmitRequest {
  id: string;
  spec: JobSpec;
  owner: string;
  /** Input files already in the blob store. */
  inputs: string[];
  /** The client's Idempotency-Key, if it sent one. */
  submitKey?: string | null;
  /**
   * The one owner whose jobs `dependsOn` may name (a user submitting sees only their own jobs);
   * null for any job (an admin).
   */
  dependencyOwner?: string | null;
}

export function submitJob(
  step: Step,
  { id, spec, owner, inputs, submitKey = null, dependencyOwner = null }: SubmitRequest,
): JobEntry {
  const { state, now } = step;
  // The same submit again (its answer was lost): the job it made, unchanged.
  const known = submitKey === null ? undefined : state.submissions.get(submissionKey(owner, submitKey));
  if (known) return known;
  // Another user's job is answered as no job at all: a dependency on it would tell its state.
  spec.dependsOn.forEach((dependency, index) => {
    const dependencyOf = state.jobOwner(dependency);
    if (dependencyOf === undefined || (dependencyOwner !== null && dependencyOf !== dependencyOwner))
      throw new InvalidRequestError(`dependsOn[${index}]`, `no job ${dependency}`);
  });
  const count = taskCount(spec);
  const initial = state.dependenciesMet(spec.dependsOn) ? "pending" : "waiting";
  const tasks: TaskRecord[] = new Array(count);
  for (let index = 0; index < count; index++) {
    tasks[index] = newTask(id, index, initial);
  }
  const record: JobRecord = {
    id,
    name: spec.name ?? defaultName(spec),
    owner,
    state: initial,
    priority: spec.priority,
    held: false,
    cancelRequested: false,
    createdAt: now,
    endedAt: null,
    spec,
    inputs,
    dynamicRequirements: null,
    submitKey,
    slowHosts: [],
  };
  const job = new JobEntry(record, state.nextSeq++, tasks);
  step.write.addJob(job);
  step.event(job, { kind: "submitted", data: { owner, tasks: count } });
  step.schedule = true;
  return job;
}

function defaultName(spec: JobSpec): string {
  const command = Array.isArray(spec.command) ? spec.command[0] : spec.command.split(/\s+/)[0];
  return (command ?? "job").split("/").pop() || "job";
}
