// A new job: its tasks start pending (or waiting on their dependencies).

import { type Dependency, dependenciesOf, sameTasksProblem } from "../../../common/model/dependencies.ts";
import { missingCredentials } from "../../../common/model/job-credentials.ts";
import { type JobSpec, taskCount } from "../../../common/model/job-spec.ts";
import { tierOf } from "../../../common/model/qos-file.ts";
import type { WorkflowRef } from "../../../common/model/records.ts";
import {
  type OwnerStanding,
  qosAccessRefusal,
  type Refusal,
  submitQuotaRefusal,
  timeLimitOf,
} from "../../scheduler/quotas.ts";
import { declaredFolders, workdirRefusal } from "../../scheduler/shared-workdir.ts";
import { type ClusterState, submissionKey } from "../../state/cluster-state.ts";
import type { LoadedTaskStates } from "../../state/dependency-verdicts.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import { newJobEntry } from "../../state/new-job.ts";
import { InvalidRequestError, QuotaError } from "../errors.ts";
import type { Step } from "../step.ts";
import { recordUnmet } from "./dependencies.ts";

export interface SubmitRequest {
  id: string;
  spec: JobSpec;
  owner: string;
  /** Input files already in the blob store. */
  inputs: string[];
  /** The SHA-256 of each of `inputs` as stored (hex, by path); absent: none known. */
  inputDigests?: Readonly<Record<string, string>>;
  /** The client's Idempotency-Key, if it sent one. */
  submitKey?: string | null;
  /**
   * The one owner whose jobs `dependsOn` may name (a user submitting sees only their own jobs);
   * null for any job (an admin).
   */
  dependencyOwner?: string | null;
  /** Task states of `tasks: same` dependencies that left memory, read from the store. */
  dependencyTasks?: LoadedTaskStates;
  /** The QoS tiers the submitter may use (a token's `--qos`); absent or null: any (an admin). */
  allowedQos?: readonly string[] | null;
  /** The workflow the job is made in, and its name there (absent: a job submitted alone). */
  workflow?: WorkflowRef | null;
  /** The job file was admitted already (admitSpec: a workflow's, all before any is made). */
  admitted?: boolean;
}

/**
 * The owner's standing for the submit checks (scheduler/quotas.ts) of a job of tier `qos`: their
 * group, and the tasks not ended of their jobs in the tier and of their group's, counted only
 * where a limit needs them. `leaving` is a job whose own tasks are left out (one being changed).
 */
export function ownerStanding(
  state: ClusterState,
  owner: string,
  qos: string,
  allowedQos: readonly string[] | null,
  leaving: JobEntry | null = null,
): OwnerStanding {
  const groups = state.tokens.groups();
  const group = groups.get(owner) ?? null;
  const own = leaving === null ? 0 : leaving.unendedTasks;
  const tier = tierOf(state.qos, qos);
  const queuedTasks =
    tier.maxQueuedTasks === null
      ? 0
      : state.unendedTasks(owner, qos) - (leaving?.qos === qos && leaving.owner === owner ? own : 0);
  const groupLimits = group === null ? undefined : state.qos.groups.get(group);
  const groupQueuedTasks =
    group === null || groupLimits?.maxQueuedTasks == null
      ? 0
      : state.unendedTasks((user) => groups.get(user) === group, null) - own;
  return { user: owner, group, allowedQos, queuedTasks, groupQueuedTasks };
}

/** How admitSpec counts and checks beyond a plain submit. */
export interface Admission {
  /** Check the tier against `allowedQos` (false: an update that leaves the tier as it is). */
  checkTier?: boolean;
  /** Check the workdir against the folders the hosts share (false: an update, which cannot change it). */
  checkWorkdir?: boolean;
  /**
   * Check that every `credentials` names a secret of the owner's (false: an update, which cannot
   * change them: a secret removed since does not stop a change of priority).
   */
  checkCredentials?: boolean;
  /** A job whose own tasks are left out of the owner's standing (one being updated). */
  leaving?: JobEntry | null;
  /** Tasks not yet in the state counted as queued too: by tier, and in all (a workflow's earlier jobs). */
  queuedBefore?: { tier: number; all: number };
  /** Prefix of a refusal's field (`jobs.NAME.` for a workflow's job). */
  field?: string;
  /** The tasks it makes queued (absent: the job's own, a submit; a retry: those it retries). */
  adds?: number;
}

/**
 * The job file as the QoS policy admits it for `owner` now: refused (400, 429: refuse) when its
 * tier is unknown or not allowed or a limit says no, when a `credentials` names no secret of the
 * owner's, or when hosts share folders and none holds its workdir (scheduler/shared-workdir.ts); a tier with a wall limit gives it to a job that names none.
 * Reads the state only (a dry run, an update, a workflow and a retry ask it too: every path that
 * makes work queued goes through it).
 */
export function admitSpec(
  state: ClusterState,
  spec: JobSpec,
  owner: string,
  allowedQos: readonly string[] | null,
  {
    checkTier = true,
    checkWorkdir = true,
    checkCredentials = true,
    leaving = null,
    queuedBefore,
    field = "",
    adds,
  }: Admission = {},
): JobSpec {
  const named = (refusal: Refusal): Refusal => ({ ...refusal, field: `${field}${refusal.field}` });
  const missing = checkCredentials
    ? missingCredentials(spec, (name) => state.secrets.get(owner, name) !== undefined)
    : null;
  if (missing) throw new InvalidRequestError(`${field}${missing.field}`, missing.message);
  const access = checkTier ? qosAccessRefusal(spec, { user: owner, allowedQos }, state.qos) : null;
  if (access) refuse(named(access));
  const standing = ownerStanding(state, owner, spec.qos, allowedQos, leaving);
  const counted = queuedBefore
    ? {
        ...standing,
        queuedTasks: standing.queuedTasks + queuedBefore.tier,
        groupQueuedTasks: standing.groupQueuedTasks + queuedBefore.all,
      }
    : standing;
  const quota = submitQuotaRefusal(spec, counted, state.qos, adds);
  if (quota) refuse(named(quota));
  const outside =
    checkWorkdir && spec.workdir !== undefined
      ? workdirRefusal(spec.workdir, declaredFolders(state.hosts.values(), state.poolFolders))
      : null;
  if (outside) refuse(named(outside));
  const timeLimitSeconds = timeLimitOf(spec, tierOf(state.qos, spec.qos));
  return timeLimitSeconds === spec.timeLimitSeconds ? spec : { ...spec, timeLimitSeconds };
}

/** Throws the refusal as the API answers it: 429 for a limit of the owner's use, else 400. */
export function refuse(refusal: Refusal): never {
  if (refusal.status === 429) throw new QuotaError(refusal.field, refusal.message);
  throw new InvalidRequestError(refusal.field, refusal.message);
}

export function submitJob(
  step: Step,
  {
    id,
    spec: asked,
    owner,
    inputs,
    inputDigests,
    submitKey = null,
    dependencyOwner = null,
    dependencyTasks,
    allowedQos = null,
    workflow = null,
    admitted = false,
  }: SubmitRequest,
): JobEntry {
  const { state, now } = step;
  // The same submit again (its answer was lost): the job it made, unchanged.
  const known = submitKey === null ? undefined : state.submissions.get(submissionKey(owner, submitKey));
  if (known) return known;
  const spec = admitted ? asked : admitSpec(state, asked, owner, allowedQos);
  checkedDependencies(state, spec, dependencyOwner);
  const { job, verdicts } = newJobEntry(
    state,
    { id, spec, owner, inputs, inputDigests, submitKey, workflow, dependencyTasks },
    now,
    state.nextSeq,
  );
  state.nextSeq++;
  step.write.addJob(job);
  step.event(job, { kind: "submitted", data: { owner, tasks: job.tasks.length } });
  for (const unmet of verdicts?.cancel ?? []) recordUnmet(step, job, unmet);
  step.schedule = true;
  return job;
}

/**
 * The job file's dependencies, each checked as a submit checks it (a 400 naming the entry): the
 * job exists and `dependencyOwner` may name it (another user's job is answered as no job at all:
 * a dependency on it would tell its state); `tasks: same` needs arrays of one size.
 */
export function checkedDependencies(
  state: ClusterState,
  spec: JobSpec,
  dependencyOwner: string | null,
): Dependency[] {
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
  return dependencies;
}
