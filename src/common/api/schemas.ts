// The API's JSON shapes as zod schemas. Routes name them in their
// schemas, the OpenAPI document is generated from them, and the CLI and the tests take their
// TypeScript types from here instead of typing the answers again.

import type { Readable } from "node:stream";
import { z } from "zod";
import { EVENT_DATA, EVENT_KINDS } from "../model/events.ts";
import { type JobSpec, jobSpecSchema } from "../model/job-spec.ts";
import {
  ACCOUNTING_OUTCOMES,
  ATTEMPT_OUTCOMES,
  ATTEMPT_STATES,
  HOST_STATES,
  JOB_STATES,
} from "../model/states.ts";
import { hostFacts } from "../protocol/messages.ts";

const isoTime = z.iso.datetime();

// ---- errors

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: "invalid, unauthorized, not_found, conflict, internal, ..." }),
      message: z.string().meta({ description: "one line, naming the field when there is one" }),
      field: z.string().optional().meta({ description: "the field at fault (400)" }),
      line: z.int().optional().meta({
        description:
          "a job or workflow file sent as text (YAML or JSON): the line of the field's key (400), from 1",
      }),
      column: z.int().optional().meta({ description: "with line: the column of the field's key, from 1" }),
    }),
  })
  .meta({ id: "Error" });
export type ErrorAnswer = z.infer<typeof errorSchema>;

// ---- jobs

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

// Loose objects: an event's shape is the intersection of its head and its kind, and neither may
// forbid the other's fields.
const eventHead = z.looseObject({
  id: z.int().meta({ description: "increasing in commit order; the id of the server-sent event" }),
  at: isoTime,
  message: z.string().meta({ description: "what happened, in words (as `steward show` prints it)" }),
});

/** One object per kind of event: `kind` names it, `data` holds the numbers and names behind the message. */
const [firstKind, ...otherKinds] = EVENT_KINDS.map((kind) =>
  z.looseObject({ kind: z.literal(kind), data: EVENT_DATA[kind] }).meta({ id: `Event.${kind}` }),
);

const eventKinds = z.discriminatedUnion("kind", [firstKind, ...otherKinds]).meta({
  discriminator: {
    propertyName: "kind",
    mapping: Object.fromEntries(EVENT_KINDS.map((kind) => [kind, `#/components/schemas/Event.${kind}`])),
  },
});

/** An event stored by an earlier version, whose kind or data this version does not know. */
const earlierEvent = z.looseObject({ kind: z.string(), data: z.record(z.string(), z.unknown()) }).meta({
  id: "Event.earlier",
  description: "an event an earlier version stored, of a kind or with data this version does not know",
});

export const eventSchema = z
  .intersection(eventHead, z.union([eventKinds, earlierEvent]))
  .meta({ id: "Event", description: "one event of a job's history: its kind, its data, and the message" });
export type Event = z.infer<typeof eventSchema>;

/** What `GET /api/v1/events` sends as the data of each server-sent event. */
export const streamEventSchema = z
  .intersection(z.looseObject({ jobId: z.string() }), eventSchema)
  .meta({ id: "JobEvent", description: "an Event with the id of its job" });
export type StreamEvent = z.infer<typeof streamEventSchema>;

/** A task state's letter in the compact form of GET /api/v1/jobs/:id/task-states. */
export const TASK_STATE_LETTERS = {
  waiting: "w",
  held: "h",
  pending: "p",
  running: "r",
  succeeded: "s",
  failed: "f",
  cancelled: "c",
} as const satisfies Record<(typeof JOB_STATES)[number], string>;

export const taskStatesSchema = z
  .object({
    count: z.int(),
    states: z.string().meta({ description: "one letter per task, task 0 first (see legend)" }),
    legend: z.record(z.string(), z.string()).meta({ description: "each state's letter" }),
  })
  .meta({ id: "TaskStates" });

export const countsSchema = z.object({
  pending: z.int(),
  running: z.int(),
  succeeded: z.int(),
  failed: z.int(),
  cancelled: z.int(),
});

/** What `GET /api/v1/events` sends as `event: progress`: a job's task counts (not stored). */
export const progressEventSchema = z
  .object({ jobId: z.string(), state: z.enum(JOB_STATES), taskCount: z.int(), counts: countsSchema })
  .meta({ id: "JobProgress" });
export type ProgressEvent = z.infer<typeof progressEventSchema>;

/**
 * The job file: the document's JobFileInput is what a submit takes,
 * JobFile what it became, with every default filled in.
 */
export const jobFileSchema = jobSpecSchema.meta({ id: "JobFile", description: "the job file" });

/**
 * A job's `spec`: the job file as accepted. Not checked again on the way out: it passed the rules
 * of the day it was submitted, and a later, stricter rule must not make the job unreadable.
 */
const acceptedJobFile = z
  .custom<JobSpec>((value) => typeof value === "object" && value !== null)
  .meta({ $ref: "#/components/schemas/JobFile" });

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

export const workflowRefSchema = z
  .object({
    id: z.string().meta({ description: "the workflow's id (flow-N)" }),
    name: z.string().meta({ description: "the job's name in the workflow" }),
  })
  .meta({ id: "WorkflowRef" });

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

export const workflowSchema = workflowCreatedSchema
  .extend({
    owner: z.string(),
    createdAt: isoTime,
    state: z
      .enum(JOB_STATES)
      .meta({ description: "the workflow's state, from its jobs' (model/workflow.ts)" }),
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

export const removedSchema = z.object({ id: z.string(), removed: z.literal(true) });
export type Removed = z.infer<typeof removedSchema>;

export const outputFileSchema = z.object({
  task: z.int(),
  attempt: z.int(),
  path: z.string(),
  bytes: z.int(),
});
export type OutputFile = z.infer<typeof outputFileSchema>;

const hostReason = z.object({ host: z.string(), reason: z.string() });

export const explanationSchema = z
  .object({
    id: z.string(),
    state: z.enum(JOB_STATES),
    reasons: z.array(z.string()).meta({ description: "what keeps the job waiting before any host" }),
    hosts: z.array(
      hostReason.extend({ eligible: z.boolean().meta({ description: "the host matches the job" }) }),
    ),
    summary: z
      .object({ matching: z.int(), withRoom: z.int() })
      .meta({ description: "how many hosts match the job, and how many of those have room now" }),
    clauses: z.array(z.object({ clause: z.string(), matching: z.int(), failing: z.array(hostReason) })).meta({
      description: "the requirements clause by clause: on how many hosts each holds, and why not elsewhere",
    }),
    ahead: z.array(z.object({ id: z.string(), priority: z.int(), owner: z.string().nullable() })).meta({
      description:
        "jobs that get their turn first and want the hosts this job matches, in turn order (for a user's token, their own jobs only)",
    }),
    othersAhead: z.int().meta({
      description:
        "how many jobs of other users are ahead besides those in `ahead`, which a user's token does not see (0 for an admin or a reader, who see them all)",
    }),
    nextPass: z
      .object({
        starts: z
          .array(z.object({ task: z.int(), hosts: z.array(z.string()), replica: z.boolean() }))
          .meta({ description: "the tasks the next pass starts, each with its hosts (rank 0 first)" }),
        preempts: z.object({ task: z.int(), host: z.string() }).nullable().meta({
          description:
            "the next pass stops a running task of lower priority on this host and keeps its room for this task",
        }),
        line: z.string().meta({ description: "the sentence steward explain prints" }),
      })
      .meta({
        description:
          "what the next scheduling pass does for the job: the scheduler's own pass run dry, so it says what the scheduler does",
      }),
    running: z
      .array(
        z.object({
          task: z.int(),
          attempt: z.int(),
          host: z.string(),
          estimates: z
            .array(z.object({ host: z.string(), gain: z.number() }))
            .nullable()
            .meta({ description: "the last rescheduling estimate, best gain first" }),
          estimatedAt: isoTime.nullable(),
          preemption: z.object({ candidate: z.boolean(), reason: z.string() }).nullable(),
          line: z.string().meta({ description: "the sentence steward explain prints" }),
        }),
      )
      .meta({ description: "the job's running tasks, with what rescheduling and preemption last said" }),
    pools: z
      .array(
        z.object({
          pool: z.string(),
          state: z.enum(["ok", "unavailable"]),
          line: z.string().meta({ description: "the sentence steward explain prints" }),
        }),
      )
      .meta({
        description: "the batch-backed pools: whether their pilots could run the job, and what they do now",
      }),
  })
  .meta({ id: "Explanation" });
export type Explanation = z.infer<typeof explanationSchema>;

/** What a dry run of a submit answers: the job file as the server reads it, nothing created. */
export const checkedJobFileSchema = z
  .object({
    spec: acceptedJobFile.meta({ description: "the job file with every default filled in" }),
    explanation: explanationSchema.optional().meta({
      description:
        "with explain=1: what explain would say of the job submitted now (its id is `dry-run`; no job is made)",
    }),
  })
  .meta({ id: "CheckedJobFile" });
export type CheckedJobFile = z.infer<typeof checkedJobFileSchema>;

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

// ---- hosts

/** The host facts as agents send them (src/common/protocol/messages.ts): one schema for both. */
export const hostFactsSchema = hostFacts;

export const poolSchema = z
  .object({
    name: z.string(),
    driver: z.string(),
    state: z.enum(["ok", "unavailable"]),
    reason: z
      .string()
      .nullable()
      .meta({ description: "why the pool is unavailable: the batch system's message" }),
    pilots: z.object({ pending: z.int(), running: z.int(), ending: z.int() }),
  })
  .meta({ id: "Pool" });
export type Pool = z.infer<typeof poolSchema>;

export const shareLineSchema = z
  .object({
    kind: z.enum(["account", "user"]),
    name: z.string(),
    parent: z.string().nullable().meta({ description: "the account it is in; null for the root" }),
    depth: z.int().meta({ description: "0 for the root, 1 under it, and so on" }),
    rawShares: z
      .number()
      .meta({ description: "shares as the shares file gives them (1 for a user it names nowhere)" }),
    normShares: z
      .number()
      .meta({ description: "its fraction of the whole grid: levelShares times the parent's" }),
    usage: z.number().meta({
      description: "cpu-seconds used, decayed with the half-life (running attempts count as they run)",
    }),
    normUsage: z.number().meta({ description: "its fraction of every user's usage" }),
    levelShares: z.number().meta({ description: "s: its shares over its and its siblings'" }),
    levelUsage: z
      .number()
      .meta({ description: "u: its usage over its and its siblings' (0 when none used anything)" }),
    levelFactor: z.number().meta({ description: "2^(-u/s): siblings are ranked by it, highest first" }),
    factor: z.number().nullable().meta({
      description:
        "a user's fair-share factor, its rank over every user (1 for the first; a user who used nothing is first): the waiting user with the highest goes first; null for an account",
    }),
  })
  .meta({ id: "ShareLine" });

export const sharesSchema = z
  .object({
    at: z.iso.datetime().meta({ description: "when the figures were taken" }),
    halfLifeSeconds: z
      .number()
      .meta({ description: "usage counts half as much after this long (--fair-share-half-life)" }),
    lines: z.array(shareLineSchema).meta({
      description:
        "the tree, the root first, each account followed by its users and sub-accounts; a user token gets its own line and the accounts above it",
    }),
  })
  .meta({ id: "Shares" });

export const hostSchema = z
  .object({
    name: z.string(),
    pool: z.string(),
    state: z.enum(HOST_STATES),
    connected: z.boolean().meta({ description: "whether its agent is attached now" }),
    slots: z.int(),
    slotsFree: z.int(),
    liveAttempts: z.int().meta({
      description:
        "attempts the host runs or is stopping now (0 once a draining host's work has ended or moved)",
    }),
    labels: z.record(z.string(), z.string()),
    facts: hostFactsSchema,
    lastSeen: isoTime,
    endsAt: isoTime.nullable().meta({
      description: "a pilot's walltime end (host.secondsLeft counts down to it); null for other hosts",
    }),
  })
  .meta({ id: "Host" });
export type Host = z.infer<typeof hostSchema>;

export const hostRemovedSchema = z
  .object({
    name: z.string(),
    removed: z.literal(true),
    revokedCredentials: z.array(z.string()).meta({ description: "the ids of the host credentials revoked" }),
  })
  .meta({ id: "HostRemoved" });
export type HostRemoved = z.infer<typeof hostRemovedSchema>;

// ---- system

export const healthSchema = z.object({
  ok: z.boolean(),
  role: z.enum(["leader", "standby"]),
  /** The leader's URL when known. */
  leader: z.string().nullable(),
  /** The leadership term: it grows with every start (and, with HA, every election). */
  term: z.int(),
});
export type Health = z.infer<typeof healthSchema>;

// ---- agents' files

export const bytesWrittenSchema = z.object({ bytes: z.int() });

export const checkpointCommittedSchema = z.object({
  generation: z.int(),
  bytes: z.int(),
  previous: z.int().nullable(),
});

/** A file's bytes, streamed both ways (never whole in memory): a Readable on the server. */
export const fileBytes = z
  .custom<Readable>((value) => typeof (value as Readable | null)?.pipe === "function")
  .meta({ type: "string", format: "binary" });

const ERROR_DESCRIPTIONS = {
  400: "a parameter, the query or the body is not valid: the message names the field",
  401: "missing, wrong, revoked or expired bearer token",
  403: "the token's role may not do this (a reader changes nothing; only admins manage hosts and tokens)",
  404: "no such job, task, host or file (or a job of another user; on agents' routes, an attempt not on the calling host)",
  409: "the request conflicts with the current state (for example an attempt that is no longer current)",
  413: "a file or the body is larger than the server allows",
  501: "not available on this server's store (a backup of a PostgreSQL store: use pg_dump)",
  429: "too much from this token: submits over its rate (the message and Retry-After say when to try again), or more event streams than it may hold at once (the message names the limit)",
} as const;

/** A JSON answer with what it is: for a route's response schema, and so for the OpenAPI document. */
export function json<Schema extends z.ZodType>(schema: Schema, description: string) {
  return { description, content: { "application/json": { schema } } };
}

/** An answer of bytes (a file, a log, an archive) of this content type, for a route's response schema. */
export function binary(description: string, contentType = "application/octet-stream") {
  return { description, content: { [contentType]: { schema: fileBytes } } };
}

/** The error answers a route may give, for its response schema (and so for the OpenAPI document). */
export function errors<const Code extends keyof typeof ERROR_DESCRIPTIONS>(...codes: Code[]) {
  const answers = {} as Record<Code, ReturnType<typeof json<typeof errorSchema>>>;
  for (const code of codes) answers[code] = json(errorSchema, ERROR_DESCRIPTIONS[code]);
  return answers;
}

// ---- tokens

export const ROLES = ["admin", "user", "reader"] as const;

export const tokenSchema = z
  .object({
    id: z.string().meta({ description: "the token's public id: what list shows and revoke takes" }),
    kind: z.enum(["api", "join", "host"]),
    user: z
      .string()
      .meta({ description: "an API token's user; a host credential's host; a join token's maker" }),
    role: z.enum(ROLES).nullable(),
    pool: z.string().nullable().meta({ description: "a join token's pool (null: any pool)" }),
    state: z.enum(["active", "revoked", "expired"]),
    createdAt: isoTime,
    createdBy: z.string(),
    expiresAt: isoTime.nullable(),
    revokedAt: isoTime.nullable(),
    group: z.string().nullable().meta({ description: "an API token's user's group (null: none)" }),
    qos: z.array(z.string()).nullable().meta({
      description: "the QoS tiers an API token's jobs may ask for (null: normal only; an admin's: any)",
    }),
  })
  .meta({ id: "Token" });
export type TokenView = z.infer<typeof tokenSchema>;

export const newTokenSchema = tokenSchema
  .extend({ token: z.string().meta({ description: "the token itself: shown this once, never again" }) })
  .meta({ id: "NewToken" });
export type NewTokenView = z.infer<typeof newTokenSchema>;

export const whoamiSchema = z
  .object({
    user: z.string(),
    role: z.enum(ROLES),
    tokenId: z.string().nullable().meta({ description: "null for the admin token given at server start" }),
    expiresAt: isoTime.nullable(),
    group: z.string().nullable().meta({ description: "the token's group (null: none)" }),
    qos: z
      .array(z.string())
      .nullable()
      .meta({ description: "the QoS tiers the token's jobs may ask for (null: any, an admin)" }),
  })
  .meta({ id: "WhoAmI" });
export type WhoAmI = z.infer<typeof whoamiSchema>;

// ---- accounting

export const accountingRowSchema = z
  .object({
    job: z.string(),
    name: z.string().meta({ description: "the job's name" }),
    owner: z.string(),
    task: z.int(),
    attempt: z.int(),
    host: z.string().meta({ description: "rank 0's host" }),
    outcome: z.enum(ACCOUNTING_OUTCOMES).nullable().meta({
      description: "the attempt's outcome; `held` for one a hold stopped (its outcome `preempted`)",
    }),
    exitCode: z.int().nullable(),
    signal: z.int().nullable().meta({ description: "the signal that ended the job (an exit code of 128+N)" }),
    startedAt: isoTime,
    endedAt: isoTime,
    usage: usageSchema.nullable(),
  })
  .meta({ id: "AccountingRow", description: "an ended attempt with what it used (`steward acct`)" });
export type AccountingRow = z.infer<typeof accountingRowSchema>;
