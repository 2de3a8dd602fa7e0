// A new job: its tasks start pending (or waiting on their dependencies).

import { dependenciesOf, sameTasksProblem } from "../../../common/model/dependencies.ts";
import { type JobSpec, taskCount } from "../../../common/model/job-spec.ts";
import { countBucket, deriveJobState, emptyCounts } from "../../../common/model/job-state.ts";
import { newTask } from "../../../common/model/new-records.ts";
import type { JobRecord, TaskRecord } from "../../../common/model/records.ts";
import { isEndedState, type TaskState } from "../../../common/model/states.ts";
import { submissionKey } from "../../state/cluster-state.ts";
import { JobEntry } from "../../state/job-entry.ts";
import { InvalidRequestError } from "../errors.ts";
import type { Step } from "../step.ts";
import { initialVerdicts, type LoadedTaskStates, recordUnmet } from "./dependencies.ts";

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
  /** Task states of `tasks: same` dependencies that left memory, read from the store. */
  dependencyTasks?: LoadedTaskStates;
}

export function submitJob(
  step: Step,
  { id, spec, owner, inputs, submitKey = null, dependencyOwner = null, dependencyTasks }: SubmitRequest,
): JobEntry {
  const { state, now } = step;
  // The same submit again (its answer was lost): the job it made, unchanged.
  const known = submitKey === null ? undefined : state.submissions.get(submissionKey(owner, submitKey));
  if (known) return known;
  // Another user's job is answered as no job at all: a dependency on it would tell its state.
  const count = taskCount(spec);
  const dependencies = dependenciesOf(spec.dependsOn);
  dependencies.forEach((dependency, index) => {
    const dependencyOf = state.jobOwner(dependency.job);
    if (dependencyOf === undefined || (dependencyOwner !== null && dependencyOf !== dependencyOwner))
      throw new InvalidRequestError(`dependsOn[${index}]`, `no job ${dependency.job}`);
    if (!dependency.sameTasks) return;
    const problem = sameTasksProblem(dependency.job, count, state.header(dependency.job)?.taskCount ?? 0);
    if (problem) throw new InvalidRequestError(`dependsOn[${index}].tasks`, problem);
  });
  const verdicts =
    dependencies.length > 0 ? initialVerdicts(state, dependencies, count, dependencyTasks) : null;
  // Each task starts pending, waiting, or cancelled by a dependency that can never be met.
  const initialStates: TaskState[] = new Array(count).fill(verdicts ? "waiting" : "pending");
  for (const index of verdicts?.release ?? []) initialStates[index] = "pending";
  for (const unmet of verdicts?.cancel ?? [])
    for (const index of unmet.tasks) initialStates[index] = "cancelled";
  const tasks: TaskRecord[] = new Array(count);
  for (let index = 0; index < count; index++) tasks[index] = newTask(id, index, initialStates[index]);
  const counts = emptyCounts();
  for (const task of tasks) counts[countBucket(task.state)]++;
  const initial = deriveJobState({
    counts,
    held: false,
    dependenciesMet: !verdicts || verdicts.release.length > 0 || counts.pending === 0,
  });
  const record: JobRecord = {
    id,
    name: spec.name ?? defaultName(spec),
    owner,
    state: initial,
    priority: spec.priority,
    held: false,
    cancelRequested: false,
    createdAt: now,
    endedAt: isEndedState(initial) ? now : null,
    spec,
    inputs,
    dynamicRequirements: null,
    submitKey,
    slowHosts: [],
  };
  const job = new JobEntry(record, state.nextSeq++, tasks);
  step.write.addJob(job);
  step.event(job, { kind: "submitted", data: { owner, tasks: count } });
  for (const unmet of verdicts?.cancel ?? []) recordUnmet(step, job, unmet);
  step.schedule = true;
  return job;
}

function defaultName(spec: JobSpec): string {
  const command = Array.isArray(spec.command) ? spec.command[0] : spec.command.split(/\s+/)[0];
  return (command ?? "job").split("/").pop() || "job";
}
