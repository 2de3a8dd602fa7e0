// A job as the API shows it: its summary, its tasks, their attempts and what each used.

import { z } from "zod";
import { ATTEMPT_OUTCOMES, ATTEMPT_STATES, JOB_STATES } from "../model/states.ts";
import { eventSchema } from "./events.ts";
import { isoTime } from "./iso-time.ts";
import { acceptedJobFile } from "./job-file.ts";
import { countsSchema } from "./task-states.ts";
import { workflowRefSchema } from "./workflows.ts";

export const usageSchema = z
  .object({
    userSeconds: z
      .number()
      .nullable()
      .meta({ description: "CPU time in user mode, every process of the attempt (null: not measured)" }),
    systemSeconds: z.number().nullable().meta({ description: "CPU time in the kernel (null: not measured)" }),
    peakMemoryMb: z
      .number()
      .nullable()
      .meta({ description: "the most memory the attempt held at once (null: not measured)" }),
    wallSeconds: z.number().meta({ description: "from the job's start to its end" }),
    signal: z
      .int()
      .nullable()
      .meta({ description: "the signal that ended the job (its exit code is 128+N), or null" }),
  })
  .meta({
    id: "Usage",
    description:
      "what an attempt used, measured by its agent from its cgroup (an agent without enforcement: CPU time from the job's supervisor, that of the job and the processes it waited for, and no peak memory; a multi-node attempt adds up its ranks)",
  });
export type Usage = z.infer<typeof usageSchema>;

export const attemptSchema = z
  .object({
    number: z.int().meta({ description: "the STEWARD_ATTEMPT the job saw" }),
    host: z.string().meta({ description: "the agent's --name" }),
    state: z.enum(ATTEMPT_STATES),
    outcome: z.enum(ATTEMPT_OUTCOMES).nullable().meta({ description: "null until ended" }),
    reason: z.string().nullable(),
    exitCode: z.int().nullable(),
    restarted: z.boolean(),
    startedAt: isoTime,
    endedAt: isoTime.nullable(),
    usage: usageSchema
      .nullable()
      .meta({ description: "null while running, or when its agent did not measure" }),
    placement: z
      .array(
        z.object({
          host: z.string(),
          rank: z.int(),
          gpus: z.array(z.string()).optional().meta({ description: "the host's GPU ids given to the rank" }),
        }),
      )
      .meta({ description: "where each rank ran (one entry for a single-host job), rank 0 first" }),
    memoryMb: z.number().nullable().optional().meta({
      description: "the memory it was given when a retry grew it (retry.memoryGrowth); null: the job's",
    }),
  })
  .meta({ id: "Attempt" });
export type Attempt = z.infer<typeof attemptSchema>;

export const checkpointSchema = z.object({ generation: z.int(), bytes: z.int(), at: isoTime });

export const taskSchema = z
  .object({
    index: z.int(),
    state: z.enum(JOB_STATES),
    progress: z
      .object({ fraction: z.number(), at: isoTime })
      .nullable()
      .meta({ description: "the last progress a running task reported (0..1)" }),
    attempts: z.array(attemptSchema),
    checkpoint: checkpointSchema.nullable(),
  })
  .meta({ id: "Task" });
export type Task = z.infer<typeof taskSchema>;

export const jobSummarySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    owner: z.string(),
    state: z.enum(JOB_STATES),
    priority: z.int(),
    qos: z.string().meta({ description: "the job's QoS tier (the job file's `qos`)" }),
    createdAt: isoTime,
    endedAt: isoTime.nullable(),
    taskCount: z.int(),
    counts: countsSchema,
  })
  .meta({ id: "JobSummary" });
export type JobSummary = z.infer<typeof jobSummarySchema>;

export const jobSchema = jobSummarySchema
  .extend({
    spec: acceptedJobFile,
    workflow: workflowRefSchema.nullable().optional().meta({
      description: "the workflow the job was made in, and its name there; null for a job submitted alone",
    }),
    tasks: z
      .array(taskSchema)
      .optional()
      .meta({ description: "left out with ?tasks=0, and in the answer to a submit of an array" }),
    events: z.array(eventSchema).optional().meta({ description: "left out with ?events=0" }),
  })
  .meta({ id: "Job" });
export type Job = z.infer<typeof jobSchema>;

export const removedSchema = z.object({ id: z.string(), removed: z.literal(true) });
export type Removed = z.infer<typeof removedSchema>;

export const outputFileSchema = z.object({
  task: z.int(),
  attempt: z.int(),
  path: z.string(),
  bytes: z.int(),
});
export type OutputFile = z.infer<typeof outputFileSchema>;
