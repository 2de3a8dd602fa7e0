// A workflow's jobs cancelled, held, released or removed as one request (`steward cancel flow-N`,
// `hold`, `release`, `rm`): every job in one step, so one commit and one answer, all or none.

import type { WorkflowMember, WorkflowRecord } from "../../../common/model/records.ts";
import { isEndedState } from "../../../common/model/states.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import type { Step } from "../step.ts";
import { cancelJob, holdJob, releaseJob, removeJob } from "./control.ts";

function findWorkflow(step: Step, id: string): WorkflowRecord {
  const workflow = step.state.workflows.get(id);
  if (!workflow) throw new NotFoundError(`no workflow ${id}`);
  return workflow;
}

export interface WorkflowJobsTouched {
  workflow: WorkflowRecord;
  /** The members acted on, in the workflow's order. */
  jobs: WorkflowMember[];
}

/**
 * Cancels every job of the workflow that has not ended, dependants first (so that each ends by
 * this cancel, not as a dependency's failure); what has ended is left as it is.
 */
export function cancelWorkflow(step: Step, id: string, by = "user"): WorkflowJobsTouched {
  const workflow = findWorkflow(step, id);
  const open = workflow.jobs.filter((member) => {
    const state = step.state.jobState(member.job);
    return state !== undefined && !isEndedState(state);
  });
  for (const member of [...open].reverse()) {
    const job = step.state.jobs.get(member.job);
    if (job && !job.isEnded()) cancelJob(step, member.job, by);
  }
  return { workflow, jobs: open };
}

/**
 * Removes every job of the workflow with their records; refused (nothing removed) while one has
 * not ended, naming it. Jobs removed before are passed over; the workflow's own record stays (its
 * graph shows its jobs as removed).
 */
export function removeWorkflow(step: Step, id: string): WorkflowJobsTouched {
  const workflow = findWorkflow(step, id);
  const present = workflow.jobs.filter((member) => step.state.jobState(member.job) !== undefined);
  for (const member of present) {
    const state = step.state.jobState(member.job)!;
    if (!isEndedState(state))
      throw new ConflictError(
        `job ${member.job} (${member.name}) of workflow ${id} is ${state}: cancel the workflow first (steward cancel ${id})`,
      );
  }
  for (const member of present) removeJob(step, member.job);
  return { workflow, jobs: present };
}

/** Holds every job of the workflow that has not ended (those held already stay so). */
export function holdWorkflow(step: Step, id: string, by = "user", reason?: string): WorkflowJobsTouched {
  const workflow = findWorkflow(step, id);
  const open = workflow.jobs.filter((member) => {
    const job = step.state.jobs.get(member.job);
    return job !== undefined && !job.isEnded() && !job.record.held;
  });
  for (const member of open) holdJob(step, member.job, by, reason);
  return { workflow, jobs: open };
}

/** Releases every held job of the workflow. */
export function releaseWorkflow(step: Step, id: string, by = "user"): WorkflowJobsTouched {
  const workflow = findWorkflow(step, id);
  const held = workflow.jobs.filter((member) => step.state.jobs.get(member.job)?.record.held === true);
  for (const member of held) releaseJob(step, member.job, by);
  return { workflow, jobs: held };
}
