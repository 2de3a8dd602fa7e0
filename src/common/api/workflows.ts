// A workflow as the API shows it: the answer to its submit, its graph, its dry run, and what a
// command on it did.

import { z } from "zod";
import { JOB_STATES } from "../model/states.ts";
import { explanationSchema } from "./explanation.ts";
import { isoTime } from "./iso-time.ts";
import { acceptedJobFile } from "./job-file.ts";
import { countsSchema } from "./task-states.ts";

export const workflowRefSchema = z
  .object({
    id: z.string().meta({ description: "the workflow's id (flow-N)" }),
    name: z.string().meta({ description: "the job's name in the workflow" }),
  })
  .meta({ id: "WorkflowRef" });

const workflowEdgeSchema = z.object({
  name: z.string().meta({ description: "the job waited for, by its name in the workflow" }),
  when: z.enum(["succeeded", "ended", "failed"]),
  sameTasks: z.boolean().meta({ description: "tasks: same (task i waits for task i)" }),
});

/** The answer to a workflow's submit: its id and its jobs' ids by name. */
export const workflowCreatedSchema = z
  .object({
    workflow: z.string().meta({ description: "the workflow's id (flow-N)" }),
    name: z.string().nullable(),
    jobs: z.record(z.string(), z.string()).meta({ description: "each job's id, by its name" }),
  })
  .meta({ id: "WorkflowCreated" });
export type WorkflowCreated = z.infer<typeof workflowCreatedSchema>;

/** A workflow as `GET /api/v1/workflows` lists it: its jobs by name, without the graph. */
export const workflowSummarySchema = workflowCreatedSchema
  .extend({
    owner: z.string(),
    createdAt: isoTime,
    state: z
      .enum(JOB_STATES)
      .meta({ description: "the workflow's state, from its jobs' (model/workflow.ts)" }),
  })
  .meta({ id: "WorkflowSummary" });
export type WorkflowSummary = z.infer<typeof workflowSummarySchema>;

/** A workflow with its graph: its summary and each job's state, counts and edges. */
export const workflowSchema = workflowSummarySchema
  .extend({
    graph: z
      .array(
        z.object({
          name: z.string(),
          job: z.string().meta({ description: "the job's id" }),
          state: z.enum(JOB_STATES).nullable().meta({ description: "null: the job was removed" }),
          taskCount: z.int(),
          counts: countsSchema,
          endedAt: isoTime.nullable(),
          dependsOn: z.array(workflowEdgeSchema),
        }),
      )
      .meta({ description: "the jobs, each after those it depends on, with the edges by name" }),
  })
  .meta({ id: "Workflow" });
export type Workflow = z.infer<typeof workflowSchema>;

export const workflowRetrySchema = z
  .object({
    workflow: z.string(),
    retried: z
      .array(z.object({ name: z.string(), job: z.string(), tasks: z.array(z.int()) }))
      .meta({ description: "the jobs given new attempts, with their tasks retried" }),
  })
  .meta({ id: "WorkflowRetried" });
export type WorkflowRetry = z.infer<typeof workflowRetrySchema>;

/** The answer to a workflow's cancel, hold, release or remove: the jobs it acted on. */
export const workflowJobsSchema = z
  .object({
    workflow: z.string(),
    state: z
      .enum(JOB_STATES)
      .nullable()
      .meta({ description: "the workflow's state after (null once its jobs are removed)" }),
    jobs: z
      .array(
        z.object({
          name: z.string(),
          job: z.string(),
          state: z.enum(JOB_STATES).nullable().meta({ description: "its state after (null: removed)" }),
        }),
      )
      .meta({ description: "the jobs acted on, in the workflow's order (those already so are left out)" }),
  })
  .meta({ id: "WorkflowJobs" });
export type WorkflowJobs = z.infer<typeof workflowJobsSchema>;

/** A workflow's dry run (`POST /api/v1/workflows?dryRun=1`): every job checked, nothing made. */
export const checkedWorkflowFileSchema = z
  .object({
    name: z.string().nullable(),
    jobs: z
      .array(
        z.object({
          name: z.string(),
          dependsOn: z.array(workflowEdgeSchema),
          spec: acceptedJobFile.meta({
            description: "the job file with every default filled in (dependsOn by name)",
          }),
          explanation: explanationSchema.optional().meta({
            description:
              "with explain=1: what explain would say of the job submitted now once what it waits for is done (its id is `dry-run`)",
          }),
        }),
      )
      .meta({ description: "the jobs, each after those it depends on (the order a submit makes them)" }),
  })
  .meta({ id: "CheckedWorkflowFile" });
export type CheckedWorkflowFile = z.infer<typeof checkedWorkflowFileSchema>;
