// A new job's entry, made from its admitted job file as a submit makes it: its tasks pending,
// waiting on their dependencies or cancelled by one that can never be met, the job's state from
// theirs. The submit handler (reactor/handlers/submit.ts) adds it to the state; explain's draft of
// a job file not submitted (planner/explain-job.ts) is the same entry, never added. Reads the state
// only.

import { dependenciesOf } from "../../common/model/dependencies.ts";
import { type JobSpec, taskCount } from "../../common/model/job-spec.ts";
import { countBucket, deriveJobState, emptyCounts } from "../../common/model/job-state.ts";
import { newTask } from "../../common/model/new-records.ts";
import type { JobRecord, TaskRecord, WorkflowRef } from "../../common/model/records.ts";
import { isEndedState } from "../../common/model/states.ts";
import type { ClusterState } from "./cluster-state.ts";
import { initialTaskStates, type LoadedTaskStates, type WaitingVerdicts } from "./dependency-verdicts.ts";
import { JobEntry } from "./job-entry.ts";

export interface NewJob {
  id: string;
  /** The job file as admitted (a tier's wall limit given: reactor/handlers/submit.ts admitSpec). */
  spec: JobSpec;
  owner: string;
  /** Input files already in the blob store. */
  inputs: string[];
  /** The SHA-256 of each of `inputs` as stored (hex, by path); absent: none known. */
  inputDigests?: Readonly<Record<string, string>>;
  /** The client's Idempotency-Key, or null. */
  submitKey: string | null;
  /** The workflow the job is made in, and its name there (null: a job submitted alone). */
  workflow: WorkflowRef | null;
  /** Task states of `tasks: same` dependencies that left memory, read from the store. */
  dependencyTasks?: LoadedTaskStates;
}

/**
 * The entry of the job `request` makes at `now`, queued `seq`-th, outside the state, and the verdicts
 * of its dependencies (null: it has none): those that can never be met are the caller's to record.
 */
export function newJobEntry(
  state: ClusterState,
  { id, spec, owner, inputs, inputDigests, submitKey, workflow, dependencyTasks }: NewJob,
  now: number,
  seq: number,
): { job: JobEntry; verdicts: WaitingVerdicts | null } {
  const count = taskCount(spec);
  const dependencies = dependenciesOf(spec.dependsOn);
  const { states, verdicts } = initialTaskStates(state, dependencies, count, dependencyTasks);
  const tasks: TaskRecord[] = new Array(count);
  const counts = emptyCounts();
  for (let index = 0; index < count; index++) {
    tasks[index] = newTask(id, index, states[index]);
    counts[countBucket(states[index])]++;
  }
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
    inputDigests: knownDigests(inputs, inputDigests),
    dynamicRequirements: null,
    submitKey,
    slowHosts: [],
    workflow,
  };
  const job = new JobEntry(record, seq, tasks);
  job.qosPriority = state.qosPriorityOf(job.qos);
  return { job, verdicts };
}

/** A job file without a name is named after its command's program (`/usr/bin/env` -> `env`). */
function defaultName(spec: JobSpec): string {
  const command = Array.isArray(spec.command) ? spec.command[0] : spec.command.split(/\s+/)[0];
  return (command ?? "job").split("/").pop() || "job";
}

/**
 * The digests of the job's inputs as the record keeps them: each of `inputs` by path, or null
 * unless every one of them has a digest (none uploaded, or an input stored without one, keeps none:
 * its agents ask the server).
 */
function knownDigests(
  inputs: readonly string[],
  digests: Readonly<Record<string, string>> | undefined,
): Record<string, string> | null {
  if (inputs.length === 0 || digests === undefined) return null;
  const kept: Record<string, string> = {};
  for (const path of inputs) {
    const digest = Object.hasOwn(digests, path) ? digests[path] : undefined;
    if (digest === undefined) return null;
    kept[path] = digest;
  }
  return kept;
}
