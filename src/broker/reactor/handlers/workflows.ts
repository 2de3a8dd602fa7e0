// Workflows (model/workflow.ts): every job of a workflow file made in one step, so one commit and
// one answer (all or none); and `steward retry flow-ID`, DAGMan's rescue: the failed and cancelled
// jobs get their failed and cancelled tasks retried, dependants first waiting again for what they
// depend on, what succeeded kept; one step too.

import { type JobSpec, taskCount } from "../../../common/model/job-spec.ts";
import type { JobRecord, WorkflowMember, WorkflowRecord } from "../../../common/model/records.ts";
import { retrySelection } from "../../../common/model/task-retry.ts";
import { type WorkflowFile, withJobIds } from "../../../common/model/workflow.ts";
import { type ClusterState, submissionKey } from "../../state/cluster-state.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { StoredJob } from "../../store/store.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import type { Step } from "../step.ts";
import { retryJob } from "./retry.ts";
import { admitSpec, submitJob } from "./submit.ts";

export interface WorkflowSubmitRequest {
  /** The workflow's id (`flow-N`). */
  id: string;
  file: WorkflowFile;
  owner: string;
  /** Each job's id, by name. */
  ids: ReadonlyMap<string, string>;
  /** Each job's input files already in the blob store, by name (absent: none). */
  inputs?: ReadonlyMap<string, string[]>;
  /** The SHA-256 of each job's inputs as stored (hex, by path), by name (absent: none known). */
  inputDigests?: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** The client's Idempotency-Key, if it sent one. */
  submitKey?: string | null;
  /** The QoS tiers the submitter may use (a token's `--qos`); absent or null: any (an admin). */
  allowedQos?: readonly string[] | null;
}

export interface WorkflowMade {
  workflow: WorkflowRecord;
  /** The jobs made, in the workflow's order (none when a repeated submit found the workflow). */
  jobs: JobEntry[];
}

/**
 * Makes every job of the workflow, each after the jobs it depends on (the file's order is
 * topological already), with its dependsOn naming their ids. The file was checked whole before
 * (names, cycles, job files, `tasks: same` sizes) and names no job outside the workflow; each
 * job's QoS tier and the owner's quotas are checked here first, the workflow's jobs counted
 * together (admitWorkflow), so no job's submit can refuse it: nothing is made unless all are.
 */
export function submitWorkflow(step: Step, request: WorkflowSubmitRequest): WorkflowMade {
  const { id, file, owner, ids, submitKey = null, allowedQos = null } = request;
  // The same submit again (both in flight at once): the workflow the first one made.
  const known =
    submitKey === null ? undefined : step.state.workflowSubmissions.get(submissionKey(owner, submitKey));
  if (known) return { workflow: known, jobs: [] };
  if (step.state.workflows.has(id)) throw new ConflictError(`workflow ${id} exists already`);
  for (const job of file.jobs)
    if (!ids.has(job.name)) throw new Error(`submitWorkflow: no id for job ${job.name}`);
  const admitted = admitWorkflow(step.state, file, ids, owner, allowedQos);
  const members: WorkflowMember[] = file.jobs.map((job) => ({
    name: job.name,
    job: ids.get(job.name)!,
    dependsOn: job.dependsOn.map(({ name, when, sameTasks }) => ({ name, when, sameTasks })),
  }));
  const workflow: WorkflowRecord = {
    id,
    name: file.name,
    owner,
    createdAt: step.now,
    jobs: members,
    submitKey,
  };
  step.write.addWorkflow(workflow);
  const jobs = file.jobs.map((job) =>
    submitJob(step, {
      id: ids.get(job.name)!,
      spec: admitted.get(job.name)!,
      owner,
      inputs: request.inputs?.get(job.name) ?? [],
      ...(request.inputDigests?.has(job.name) ? { inputDigests: request.inputDigests.get(job.name) } : {}),
      // The workflow's own jobs only: the owner's.
      dependencyOwner: owner,
      admitted: true,
      workflow: { id, name: job.name },
    }),
  );
  return { workflow, jobs };
}

/**
 * Admits every job of the workflow as its submit would (its QoS tier allowed, the owner's and
 * group's queued-task and array limits), each with the workflow's jobs before it counted as
 * queued, before anything is made: a refusal (400, 429) names the job (`jobs.NAME.qos`). The job
 * files as admitted (a tier's time limit given), by name.
 */
export function admitWorkflow(
  state: ClusterState,
  file: WorkflowFile,
  ids: ReadonlyMap<string, string>,
  owner: string,
  allowedQos: readonly string[] | null,
): Map<string, JobSpec> {
  const admitted = new Map<string, JobSpec>();
  const before = new Map<string, number>();
  let all = 0;
  for (const job of file.jobs) {
    const asked = withJobIds(job, ids);
    const spec = admitSpec(state, asked, owner, allowedQos, {
      queuedBefore: { tier: before.get(asked.qos) ?? 0, all },
      field: `jobs.${job.name}.`,
    });
    admitted.set(job.name, spec);
    const tasks = taskCount(spec);
    before.set(spec.qos, (before.get(spec.qos) ?? 0) + tasks);
    all += tasks;
  }
  return admitted;
}

export interface WorkflowRetryRequest {
  id: string;
  /** Who asks (each job's event names them). */
  by: string;
  /** The workflow's jobs that left memory and are retried, as the store holds them (by job id). */
  stored?: ReadonlyMap<string, StoredJob>;
  /** The QoS tiers who asks may use (a token's `--qos`); absent or null: any (an admin). */
  allowedQos?: readonly string[] | null;
}

export interface WorkflowRetried {
  workflow: WorkflowRecord;
  /** The jobs given new attempts, in the workflow's order, with the tasks retried. */
  retried: { name: string; job: JobEntry; tasks: number[] }[];
}

/** A member's state: in memory, retired (its header), or undefined once removed. */
function memberState(step: Step, member: WorkflowMember): JobRecord["state"] | undefined {
  return step.state.jobState(member.job);
}

/**
 * The members a workflow's retry gives new attempts: those that ended failed or cancelled (a job
 * removed since is left out). What succeeded, or has not ended, is kept as it is.
 */
export function workflowRetryCandidates(step: Step, workflow: WorkflowRecord): WorkflowMember[] {
  return workflow.jobs.filter((member) => {
    const state = memberState(step, member);
    return state === "failed" || state === "cancelled";
  });
}

/**
 * Retries a workflow: each failed or cancelled job, in the workflow's order (each after those it
 * depends on), gets its failed and cancelled tasks retried as `steward retry` does; a job that
 * waits on another takes its dependencies as they are then, so a dependant whose dependency is
 * retried in this step waits for it again. Refused (nothing changed) when no job is to retry.
 */
export function retryWorkflow(step: Step, request: WorkflowRetryRequest): WorkflowRetried {
  const { id, by } = request;
  const workflow = step.state.workflows.get(id);
  if (!workflow) throw new NotFoundError(`no workflow ${id}`);
  const candidates = workflowRetryCandidates(step, workflow);
  if (candidates.length === 0)
    throw new ConflictError(`workflow ${id} has no failed or cancelled job to retry`);
  // Checked before any change: each candidate must be in memory, or its stored copy given, and
  // admitted as a submit is, with the tasks the jobs before it retry counted as queued.
  const before = new Map<string, number>();
  let all = 0;
  for (const member of candidates) {
    const job = step.state.jobs.get(member.job);
    const stored = request.stored?.get(member.job);
    const states = (job?.tasks ?? stored?.tasks)?.map((task) => task.state);
    const record = job?.record ?? stored?.job;
    if (!states || !record)
      throw new ConflictError(`job ${member.job} (${member.name}) could not be read: try again`);
    // At least one: a job ends failed or cancelled only with a task so (model/job-state.ts).
    const adds = retrySelection(states, {}).retry.length;
    const { qos } = record.spec;
    admitSpec(step.state, record.spec, record.owner, request.allowedQos ?? null, {
      adds,
      queuedBefore: { tier: before.get(qos) ?? 0, all },
      field: `jobs.${member.name}.`,
    });
    before.set(qos, (before.get(qos) ?? 0) + adds);
    all += adds;
  }
  const retried = candidates.map((member) => {
    const outcome = retryJob(step, {
      id: member.job,
      by,
      stored: request.stored?.get(member.job) ?? null,
      workflow: id,
      admitted: true,
    });
    return { name: member.name, job: outcome.job, tasks: outcome.retry };
  });
  return { workflow, retried };
}
