// The user's requests on workflows (model/workflow.ts), one command each: a submit makes every job
// of the file in one handler (one commit, one answer), a retry reruns what failed in one handler.

import type { WorkflowRecord } from "../../../common/model/records.ts";
import type { WorkflowFile } from "../../../common/model/workflow.ts";
import { workflowId } from "../../../common/model/workflow-id.ts";
import type { StoredJob } from "../../store/store.ts";
import { NotFoundError } from "../errors.ts";
import {
  cancelWorkflow,
  holdWorkflow,
  releaseWorkflow,
  removeWorkflow,
  type WorkflowJobsTouched,
} from "../handlers/workflow-control.ts";
import { retryWorkflow, submitWorkflow } from "../handlers/workflows.ts";
import type { IdBlock } from "../id-block.ts";
import type { ReceiveWorkflow, WorkflowCommands, WorkflowIds, WorkflowRetry } from "../ports.ts";
import type { CommandContext } from "./context.ts";

/**
 * A workflow's jobs take one run of consecutive ids from `jobIds`, the block single jobs take
 * theirs from (id-block.ts): job ids follow submission order across jobs and workflows.
 */
export function workflowCommands(
  context: CommandContext,
  workflowIds: IdBlock,
  jobIds: IdBlock,
): WorkflowCommands {
  const { reactor, read, committer } = context;
  return {
    /**
     * Makes every job of the workflow at once; resolves once all are durable. A submit with a key
     * an earlier one of the owner used answers the workflow that one made (once durable), and
     * `receive` is not called (its request is read past).
     */
    async submit(
      owner: string,
      submitKey: string | null,
      receive: ReceiveWorkflow,
      allowedQos: readonly string[] | null = null,
    ): Promise<WorkflowRecord> {
      const known = submitKey === null ? undefined : read.workflowSubmission(owner, submitKey);
      if (known) {
        await committer.flush();
        return known;
      }
      // The jobs' ids stay in flight (id-block.ts) until the workflow is made or its submit gives up.
      const drawn: number[] = [];
      const assign = async (file: WorkflowFile): Promise<WorkflowIds> => {
        const id = workflowId(await workflowIds.next());
        const first = await jobIds.take(file.jobs.length);
        drawn.push(first);
        return { id, jobs: new Map(file.jobs.map((job, index) => [job.name, String(first + index)])) };
      };
      try {
        const { file, ids, inputs, inputDigests } = await receive(assign);
        const made = await reactor.run((step) =>
          submitWorkflow(step, {
            id: ids.id,
            file,
            owner,
            ids: ids.jobs,
            inputs,
            ...(inputDigests ? { inputDigests } : {}),
            submitKey,
            allowedQos,
          }),
        );
        return made.workflow;
      } finally {
        for (const first of drawn) jobIds.settle(first);
      }
    },

    /**
     * Reruns the workflow's failed and cancelled jobs (handlers/workflows.ts); the jobs of it that
     * ended and left memory are read from the store first. Admitted as a submit is: `allowedQos`
     * the tiers who asks may use (null: any, an admin).
     */
    async retry(
      id: string,
      by = "user",
      allowedQos: readonly string[] | null = null,
    ): Promise<WorkflowRetry> {
      const workflow = read.workflow(id);
      if (!workflow) throw new NotFoundError(`no workflow ${id}`);
      const stored = new Map<string, StoredJob>();
      for (const member of workflow.jobs) {
        const state = read.header(member.job)?.state;
        if ((state !== "failed" && state !== "cancelled") || !read.retired(member.job)) continue;
        const job = await read.storedJob(member.job);
        if (job) stored.set(member.job, job);
      }
      const { retried } = await reactor.run((step) => retryWorkflow(step, { id, by, stored, allowedQos }));
      return { retried: retried.map(({ name, job, tasks }) => ({ name, job: job.id, tasks })) };
    },

    /** Cancels every job of the workflow that has not ended, in one step; resolves once durable. */
    cancel(id: string, by = "user"): Promise<WorkflowJobsTouched> {
      return reactor.run((step) => cancelWorkflow(step, id, by));
    },

    /** Holds every job of the workflow that has not ended, in one step. */
    hold(id: string, by = "user", reason?: string): Promise<WorkflowJobsTouched> {
      return reactor.run((step) => holdWorkflow(step, id, by, reason));
    },

    /** Releases every held job of the workflow, in one step. */
    release(id: string, by = "user"): Promise<WorkflowJobsTouched> {
      return reactor.run((step) => releaseWorkflow(step, id, by));
    },

    /** Removes every job of the workflow (all ended), in one step; refused while one has not ended. */
    remove(id: string): Promise<WorkflowJobsTouched> {
      return reactor.run((step) => removeWorkflow(step, id));
    },
  };
}
