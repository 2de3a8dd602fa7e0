// /api/v1/jobs: submit, list, show, control, remove, logs, outputs.

import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { fileBytes } from "../../../common/api/agent-files.ts";
import { errors } from "../../../common/api/errors.ts";
import { checkedJobFileSchema } from "../../../common/api/job-file.ts";
import {
  jobSchema,
  jobSummarySchema,
  outputFileSchema,
  removedSchema,
  taskSchema,
} from "../../../common/api/jobs.ts";
import { json } from "../../../common/api/json-answer.ts";
import { TASK_STATE_LETTERS, taskStatesSchema } from "../../../common/api/task-states.ts";
import { type JobSpec, nodesOf, validateJobSpec } from "../../../common/model/job-spec.ts";
import { jobUpdateBody, parseJobUpdate } from "../../../common/model/job-update.ts";
import { JobFileError } from "../../../common/model/jobfile-error.ts";
import { parseJobFileText } from "../../../common/model/jobfile-text.ts";
import { nameMatcher } from "../../../common/model/name-pattern.ts";
import { DEFAULT_QOS } from "../../../common/model/qos-name.ts";
import type { JobHeader } from "../../../common/model/records.ts";
import { isEndedState, JOB_STATES } from "../../../common/model/states.ts";
import { parseTaskList, TaskListError } from "../../../common/model/task-list.ts";
import { isWorkflowFile } from "../../../common/model/workflow.ts";
import type { PoolNote } from "../../pools/pool-manager.ts";
import type { SubmittedJob } from "../../reactor/commands/jobs.ts";
import { InvalidRequestError, NotFoundError } from "../../reactor/errors.ts";
import type { TaskRead } from "../../reactor/read-model.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import { headOf } from "../../state/job-header.ts";
import { inputKey, jobPrefix, logKey, outputKey, outputPrefix } from "../../store/blob-layout.ts";
import type { BlobStore } from "../../store/blobs.ts";
import { seesAllJobs } from "../access.ts";
import { actorOf, START_ADMIN } from "../auth.ts";
import { keepJobFileText } from "../job-file-source.ts";
import { withParamsFile } from "../params-file.ts";
import type { ApiPorts, StoreReads } from "../ports.ts";
import type { SubmitRateLimiter } from "../rate-limit.ts";
import { filePath, flag, jobParams, taskParams, USER_NAME, wholeNumber } from "../requests.ts";
import {
  jobFileTooLarge,
  limitUpload,
  MAX_JOB_FILE_BYTES,
  UploadTooLargeError,
  uploadTooLarge,
} from "../upload-limit.ts";
import { jobHeadView, jobSummaryView, jobView, taskReadView } from "../views.ts";

export interface JobRouteDeps {
  ports: ApiPorts;
  store: StoreReads;
  blobs: BlobStore;
  /** The largest input file a submit may bring, in bytes. */
  maxUploadBytes: number;
  /** Submits per user token (admins are not limited). */
  submitLimiter: SubmitRateLimiter;
  /** What each batch-backed pool does for a job (a dry run's explanation). */
  explainPools?: (job: JobEntry) => PoolNote[];
}

const LOG_POLL_MS = 250;

/** The most jobs one page of GET /api/v1/jobs may hold. */
export const MAX_PAGE = 1000;

const listQuery = z.object({
  all: flag(false, "include ended jobs"),
  state: z.enum(JOB_STATES).optional().meta({ description: "only jobs in this state (ended ones too)" }),
  limit: z.coerce
    .number<string>()
    .int()
    .min(1)
    .max(MAX_PAGE)
    .optional()
    .meta({ description: `at most this many jobs (1..${MAX_PAGE}); without it, all of them` }),
  after: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "a job id: only the jobs after it in id order (the next page)" }),
  user: z.string().min(1).optional().meta({ description: "only this owner's jobs" }),
  name: z.string().min(1).max(256).optional().meta({
    description:
      "only jobs with this name: exact, or a glob where `*` is any run of characters and `?` one character (`sweep-*`)",
  }),
});

/**
 * Submit: the job file as JSON, or multipart/form-data with a `job` field then one part per input.
 * The job file is checked in the handler (validateJobSpec), the same for both, so that an error
 * names its field the way the job file's own errors do; the document still shows its schema.
 */
const submitBody = z.unknown().meta({
  content: {
    "application/json": { schema: { $ref: "#/components/schemas/JobFileInput" } },
    "application/yaml": { schema: { type: "string", description: "the job file as YAML, as on disk" } },
    "multipart/form-data": {
      schema: {
        type: "object",
        properties: {
          job: { type: "string", description: "the job file as JSON (or as YAML, as on disk); comes first" },
        },
        required: ["job"],
        additionalProperties: {
          type: "string",
          format: "binary",
          description: "one file part per input, named by its path",
        },
      },
    },
  },
});

const submitQuery = z.object({
  dryRun: flag(
    false,
    "1: check the job file (JSON or YAML) and answer it as the server reads it, with its defaults; nothing is created",
  ),
  explain: flag(
    false,
    "with dryRun=1: answer also what `steward explain` would say of the job if it were submitted now (hosts, pools, requirements clause by clause)",
  ),
});

const migrateBody = z
  .object({ to: z.string().min(1).optional().meta({ description: "the host to move to" }) })
  .nullish();
// Fastify hands a request without a body to its schema as null.
const emptyBody = z.object({}).nullish();

/** The longest hold reason kept, in characters. */
const MAX_HOLD_REASON = 500;

const holdBody = z
  .object({
    reason: z
      .string()
      .min(1)
      .max(MAX_HOLD_REASON)
      .optional()
      .meta({ description: `why (at most ${MAX_HOLD_REASON} characters): kept in the job's hold event` }),
  })
  .nullish();

const taskList = z
  .union([z.string(), z.array(z.int().min(0))])
  .meta({ description: "task indexes: a list such as `3,7-9`, or an array of indexes" });

const cancelBody = z
  .object({
    tasks: taskList.optional().meta({ description: "cancel these tasks only (absent: the whole job)" }),
  })
  .nullish();

const retryBody = z
  .object({
    tasks: taskList
      .optional()
      .meta({ description: "retry these tasks (absent: every failed or cancelled task)" }),
    failed: z.boolean().optional().meta({ description: "true: failed tasks only (not cancelled ones)" }),
  })
  .nullish();

/** A task list of a request body, as indexes; a list that cannot be read is a 400 naming the field. */
function taskIndexes(tasks: string | number[]): number[] {
  if (Array.isArray(tasks)) return [...new Set(tasks)].sort((a, b) => a - b);
  try {
    return parseTaskList(tasks);
  } catch (error) {
    if (error instanceof TaskListError) throw new InvalidRequestError("tasks", error.message);
    throw error;
  }
}

const logQuery = z.object({
  task: wholeNumber().default(0).meta({ description: "task index" }),
  stream: z.enum(["stdout", "stderr"]).default("stdout"),
  follow: flag(false, "follow the attempt until it ends"),
  attempt: wholeNumber(1).optional().meta({ description: "this attempt instead of the latest" }),
  rank: wholeNumber().default(0).meta({ description: "a multi-node job's rank (0 by default)" }),
});

export function registerJobRoutes(
  app: FastifyInstance,
  { ports, store, blobs, maxUploadBytes, submitLimiter, explainPools = () => [] }: JobRouteDeps,
): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.post(
    "/api/v1/jobs",
    {
      bodyLimit: MAX_JOB_FILE_BYTES,
      schema: {
        summary:
          "Submit a job (the job file as JSON or YAML, or multipart with a `job` field and one part per input)",
        consumes: ["application/json", "application/yaml", "multipart/form-data"],
        querystring: submitQuery,
        body: submitBody,
        response: {
          200: json(checkedJobFileSchema, "a dry run: the job file is valid, and this is how it reads"),
          201: json(jobSchema, "accepted and durable: the job (without tasks for an array)"),
          ...errors(400, 401, 403, 413, 429),
        },
      },
    },
    async (request, reply) => {
      // A dry run creates nothing (no job, no blob, no rate), so it needs the job file alone: a
      // client that cannot parse YAML learns the inputs to upload from it.
      if (request.query.dryRun) {
        if (request.isMultipart())
          throw new InvalidRequestError(
            "dryRun",
            "a dry run takes the job file as JSON or YAML, not multipart",
          );
        // Refused as a submit would be: its QoS tier, the quotas (400, 429).
        refuseWorkflowFile(request.body);
        const { owner, dependencyOwner, allowedQos } = submitterOf(request);
        const spec = ports.read.admitDraft(validateJobSpec(request.body), owner, allowedQos);
        if (!request.query.explain) return { spec };
        // Explained as the submitter's job: a user's dependencies are their own jobs, and other
        // users' jobs ahead are counted, not named (as GET /api/v1/jobs/{id}/explain).
        const { principal } = request;
        const viewer = principal && !seesAllJobs(principal.role) ? principal.user : null;
        const { job, explanation } = ports.read.explainDraft(spec, owner, dependencyOwner, viewer);
        return {
          spec,
          explanation: { id: job.id, state: job.record.state, ...explanation, pools: explainPools(job) },
        };
      }
      const principal = request.principal ?? START_ADMIN;
      if (principal.role !== "admin") {
        const wait = submitLimiter.take(principal.tokenId ?? principal.user, Date.now());
        if (wait > 0) {
          const { ratePerSecond, burst } = submitLimiter.limit;
          return reply
            .code(429)
            .header("retry-after", String(Math.max(1, Math.ceil(wait))))
            .send({
              error: {
                code: "rate_limited",
                message: `too many submits from ${principal.user}'s token: at most ${ratePerSecond} a second (bursts of ${burst}); try again in ${wait.toFixed(2)} s`,
              },
            });
        }
      }
      const submitter = submitterOf(request);
      // A submit repeated with its key answers the job the first one made.
      const key = submitKeyOf(request);
      const { job, events } = request.isMultipart()
        ? await submitMultipart(request, { ports, blobs, maxUploadBytes }, submitter, key)
        : await submitJson(request.body, ports, submitter, key);
      reply.code(201);
      // A new job's events came with its commit; an earlier submit's job's are read.
      return jobView(job, events ?? (await store.events(job.id)), job.tasks.length === 1);
    },
  );

  api.get(
    "/api/v1/jobs",
    {
      schema: {
        summary:
          "List jobs in id order (those not ended, unless all=1 or state=S); a Link header with rel=next when a limited page is not the last",
        querystring: listQuery,
        response: { 200: json(z.array(jobSummarySchema), "the jobs of this page"), ...errors(400, 401) },
      },
    },
    async (request, reply) => {
      const { all, state, limit, after, name } = request.query;
      const named = name === undefined ? null : nameMatcher(name);
      // A user lists their own jobs only, whatever `user` says; admins and readers whoever they ask.
      const principal = request.principal;
      const user = principal && !seesAllJobs(principal.role) ? principal.user : request.query.user;
      // Retired jobs have ended: a listing of the others leaves the history alone.
      const listed = ports.read
        .listJobs(all || (state !== undefined && isEndedState(state)))
        .filter((job) => user === undefined || job.owner === user)
        .filter((job) => named === null || named(job.name))
        .filter((job) => (state ? job.state === state : all || !isEndedState(job.state)))
        .sort((a, b) => compareJobIds(a.id, b.id));
      const start = after === undefined ? 0 : firstAfter(listed, after);
      const page = listed.slice(start, limit === undefined ? undefined : start + limit);
      if (limit !== undefined && start + page.length < listed.length) {
        const next = new URLSearchParams();
        if (all) next.set("all", "1");
        if (state) next.set("state", state);
        if (request.query.user) next.set("user", request.query.user);
        if (name) next.set("name", name);
        next.set("limit", String(limit));
        next.set("after", page[page.length - 1].id);
        reply.header("link", `</api/v1/jobs?${next}>; rel="next"`);
      }
      return page.map(jobSummaryView);
    },
  );

  api.get(
    "/api/v1/jobs/:id",
    {
      schema: {
        summary: "One job with its tasks, attempts and events",
        params: jobParams,
        querystring: z.object({
          tasks: flag(true, "0 leaves the tasks out"),
          events: flag(true, "0 leaves the events out"),
        }),
        response: { 200: json(jobSchema, "the job"), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      if (!request.query.tasks) {
        const head = await ports.read.readJobHead(id);
        return jobHeadView(head, request.query.events ? await store.events(id) : null);
      }
      const job = await ports.read.readJob(id);
      const events = request.query.events ? await store.events(id) : null;
      return jobView(job, events);
    },
  );

  api.delete(
    "/api/v1/jobs/:id",
    {
      schema: {
        summary: "Remove an ended job with its files and checkpoints",
        params: jobParams,
        response: { 200: json(removedSchema, "removed"), ...errors(401, 403, 404, 409) },
      },
    },
    async (request) => {
      const { id } = request.params;
      await ports.jobs.remove(id);
      await blobs.deletePrefix(jobPrefix(id));
      return { id, removed: true as const };
    },
  );

  api.patch(
    "/api/v1/jobs/:id",
    {
      schema: {
        summary:
          "Update a job that has not started (pending, waiting or held): its priority, requirements, rank, cpus, memory, time limit or array throttle, checked as at submit; an array with tasks running takes a new priority or throttle only",
        params: jobParams,
        body: jobUpdateBody,
        response: {
          200: json(jobSchema, "the job as updated (and durable), without its tasks"),
          ...errors(400, 401, 403, 404, 409),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { allowedQos } = submitterOf(request);
      const job = await ports.jobs.update(id, parseJobUpdate(request.body), actorOf(request), allowedQos);
      return jobView(job, await store.events(id), false);
    },
  );

  api.post(
    "/api/v1/jobs/:id/cancel",
    {
      schema: {
        summary:
          "Cancel a job, or some of its tasks: pending tasks never start, running attempts are stopped (their outcome `cancelled`)",
        params: jobParams,
        body: cancelBody,
        response: {
          200: json(jobSchema, "the job, without its tasks"),
          ...errors(400, 401, 403, 404, 409),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const tasks = request.body?.tasks;
      const head =
        tasks === undefined
          ? await ports.jobs.cancel(id, actorOf(request))
          : await ports.jobs.cancelTasks(id, taskIndexes(tasks), actorOf(request));
      return jobHeadView(head, await store.events(id));
    },
  );

  api.post(
    "/api/v1/jobs/:id/retry",
    {
      schema: {
        summary:
          "Give failed or cancelled tasks new attempts with a fresh retry budget (from their checkpoint if they have one); tasks named that succeeded or have not ended are skipped",
        params: jobParams,
        body: retryBody,
        response: {
          200: json(
            jobSchema.extend({
              retried: z.array(z.int()).meta({ description: "the tasks given new attempts" }),
              skipped: z
                .array(z.object({ task: z.int(), state: z.enum(JOB_STATES) }))
                .meta({ description: "tasks named that were not retried, with their state" }),
            }),
            "the job (durable), without its tasks, with the tasks retried and skipped",
          ),
          ...errors(400, 401, 403, 404, 409, 429),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body = request.body ?? {};
      const outcome = await ports.jobs.retry(
        id,
        {
          ...(body.tasks === undefined ? {} : { tasks: taskIndexes(body.tasks) }),
          ...(body.failed ? { failed: true } : {}),
        },
        actorOf(request),
        submitterOf(request).allowedQos,
      );
      const view = jobView(outcome.job, await store.events(id), false);
      return { ...view, retried: outcome.retry, skipped: outcome.skipped };
    },
  );

  api.post(
    "/api/v1/jobs/:id/hold",
    {
      schema: {
        summary:
          "Hold a job: it does not start; running attempts stop (preempted, reason held); `reason` is kept in its hold event",
        params: jobParams,
        body: holdBody,
        response: {
          200: json(jobSchema, "the job, without its tasks"),
          ...errors(400, 401, 403, 404, 409),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const job = await ports.jobs.hold(id, actorOf(request), request.body?.reason);
      return jobHeadView(headOf(job), await store.events(id));
    },
  );

  api.post(
    "/api/v1/jobs/:id/release",
    {
      schema: {
        summary: "Release a held job (one that is not held is answered as it is)",
        params: jobParams,
        body: emptyBody,
        response: {
          200: json(jobSchema, "the job, without its tasks"),
          ...errors(400, 401, 403, 404, 409),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      return jobHeadView(await ports.jobs.release(id, actorOf(request)), await store.events(id));
    },
  );

  api.post(
    "/api/v1/jobs/:id/migrate",
    {
      schema: {
        summary:
          "Move a running job to another host (or the one named), resuming from its checkpoint; 409 without `to` when no other host matches the job and has room now",
        params: jobParams,
        body: migrateBody,
        response: {
          200: json(jobSchema, "the job, without its tasks"),
          ...errors(400, 401, 403, 404, 409),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const job = await ports.jobs.migrate(id, request.body?.to ?? null, actorOf(request));
      return jobView(job, await store.events(id), false);
    },
  );

  api.get(
    "/api/v1/jobs/:id/tasks/:task",
    {
      schema: {
        summary: "One task with its attempts (without the whole job: for big arrays)",
        params: taskParams,
        response: { 200: json(taskSchema, "the task"), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { id, task } = request.params;
      return taskReadView(await ports.read.readTask(id, task));
    },
  );

  api.get(
    "/api/v1/jobs/:id/task-states",
    {
      schema: {
        summary:
          "Every task's state as one letter, in index order: the compact form of a big array's tasks (100,000 tasks in 100 kB)",
        params: jobParams,
        response: { 200: json(taskStatesSchema, "the states"), ...errors(401, 404) },
      },
    },
    async (request) => {
      const states = await ports.read.readTaskStates(request.params.id);
      const letters = new Array<string>(states.length);
      for (let i = 0; i < states.length; i++) letters[i] = TASK_STATE_LETTERS[states[i]];
      return { count: states.length, states: letters.join(""), legend: TASK_STATE_LETTERS };
    },
  );

  api.get(
    "/api/v1/jobs/:id/logs",
    {
      schema: {
        summary: "stdout or stderr of a task's latest attempt (or the one named), followed with follow=1",
        params: jobParams,
        querystring: logQuery,
        response: {
          200: { description: "the log's bytes", content: { "text/plain": { schema: fileBytes } } },
          ...errors(400, 401, 404),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { task, stream, follow, attempt, rank } = request.query;
      // The job's head and the task's own rows: an ended array is not read whole for one log.
      const { header, record } = await ports.read.readJobHead(id);
      if (task >= header.taskCount) throw new NotFoundError(`job ${id} has no task ${task}`);
      if (rank >= nodesOf(record.spec)) throw new NotFoundError(`job ${id} has no rank ${rank}`);
      reply.header("content-type", "text/plain; charset=utf-8");
      const read = () => ports.read.readTask(id, task);
      return Readable.from(
        followLog(blobs, id, read, { task, stream, rank }, follow, attempt ?? null, request),
      );
    },
  );

  api.get(
    "/api/v1/jobs/:id/outputs",
    {
      schema: {
        summary: "The committed output files of each task",
        params: jobParams,
        response: { 200: json(z.array(outputFileSchema), "the files, task by task"), ...errors(401, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const job = await ports.read.readJob(id);
      const files: z.infer<typeof outputFileSchema>[] = [];
      for (const task of job.tasks) {
        if (task.resultAttempt === null) continue;
        const prefix = outputPrefix(id, task.index, task.resultAttempt);
        for (const blob of await blobs.list(prefix)) {
          files.push({
            task: task.index,
            attempt: task.resultAttempt,
            path: blob.key.slice(prefix.length + 1),
            bytes: blob.bytes,
          });
        }
      }
      return files;
    },
  );

  api.get(
    "/api/v1/jobs/:id/outputs/:task/*",
    {
      schema: {
        summary: "One output file of a task's result",
        params: taskParams.extend({ "*": filePath }),
        response: {
          200: {
            description: "the file's bytes",
            content: { "application/octet-stream": { schema: fileBytes } },
          },
          ...errors(400, 401, 404),
        },
      },
    },
    async (request, reply) => {
      const { id, task: index, "*": path } = request.params;
      const header = ports.read.header(id);
      if (!header) throw new NotFoundError(`no job ${id}`);
      // A job without that task: the same answer as a task without a result.
      const record = index < header.taskCount ? (await ports.read.readTask(id, index)).task : null;
      if (!record || record.resultAttempt === null)
        throw new NotFoundError(`task ${index} of job ${id} has no result`);
      const key = outputKey(id, index, record.resultAttempt, path);
      const info = await blobs.stat(key);
      if (!info) throw new NotFoundError(`no output ${path} in task ${index} of job ${id}`);
      reply.header("content-type", "application/octet-stream");
      reply.header("content-length", info.bytes);
      return blobs.read(key);
    },
  );
}

/**
 * The list's order: job ids are numbers given out in increasing order, compared as numbers (any
 * other id after them, as text), so that `after` needs no lookup and still works once the job it
 * names is gone.
 */
function compareJobIds(a: string, b: string): number {
  const numeric = /^\d+$/;
  const aNumber = numeric.test(a);
  const bNumber = numeric.test(b);
  if (aNumber && bNumber) return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  if (aNumber !== bNumber) return aNumber ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Index of the first job whose id comes after `after` (binary search over the sorted list). */
function firstAfter(jobs: readonly JobHeader[], after: string): number {
  let low = 0;
  let high = jobs.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareJobIds(jobs[middle].id, after) <= 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * A new job's owner: the user of the token that submits it (the start admin token's is `admin`).
 * An admin may submit on another user's behalf by naming them in `x-steward-user` (the API only;
 * the CLI sends no such header); any other role's header is ignored.
 */
export function ownerOf(request: FastifyRequest): string {
  const principal = request.principal ?? START_ADMIN;
  if (principal.role !== "admin") return principal.user;
  const header = request.headers["x-steward-user"];
  const user = Array.isArray(header) ? header[0] : header;
  return user && USER_NAME.test(user) ? user : principal.user;
}

/** A new job's owner, and whose jobs its dependsOn may name. */
interface Submitter {
  owner: string;
  /** A user's dependencies are their own jobs only (another's is answered as no job); null for an admin's. */
  dependencyOwner: string | null;
  /** The QoS tiers the token allows (`token create --qos`): the default tier when it names none; null (any) for an admin. */
  allowedQos: readonly string[] | null;
}

export function submitterOf(request: FastifyRequest): Submitter {
  const principal = request.principal ?? START_ADMIN;
  const admin = principal.role === "admin";
  return {
    owner: ownerOf(request),
    dependencyOwner: admin ? null : principal.user,
    allowedQos: admin ? null : (principal.qos ?? [DEFAULT_QOS]),
  };
}

/** The client's Idempotency-Key: letters, digits, `-` and `_`, 1 to 128 of them; null when absent. */
export function submitKeyOf(request: FastifyRequest): string | null {
  const header = request.headers["idempotency-key"];
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined) return null;
  if (!/^[\w-]{1,128}$/.test(key)) {
    throw new InvalidRequestError("Idempotency-Key", "must be 1 to 128 letters, digits, - or _");
  }
  return key;
}

async function submitJson(
  body: unknown,
  ports: ApiPorts,
  { owner, dependencyOwner, allowedQos }: Submitter,
  key: string | null,
): Promise<SubmittedJob> {
  refuseWorkflowFile(body);
  const spec = validateJobSpec(body);
  if (spec.inputs.length > 0) {
    throw new InvalidRequestError(
      "inputs[0]",
      `${spec.inputs[0]}: file was not uploaded (send the job as multipart/form-data with its input files)`,
    );
  }
  return ports.jobs.submitWithEvents({ owner, submitKey: key, dependencyOwner, allowedQos }, async () => ({
    spec,
    inputs: [],
  }));
}

/** A workflow file sent as a job: refused naming where it goes (its `jobs` would be an unknown key). */
function refuseWorkflowFile(body: unknown): void {
  if (isWorkflowFile(body))
    throw new InvalidRequestError(
      "jobs",
      "this is a workflow file: send it to POST /api/v1/workflows (steward submit does)",
    );
}

/**
 * The multipart `job` field as data: JSON, or else YAML (the job file's text as on disk, which a
 * client without a YAML parser sends as it is).
 */
export function parseJobField(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    try {
      return parseJobFileText(text);
    } catch (error) {
      // "job: not valid YAML or JSON: ... (line 3, column 1)": the place is in the field's text.
      if (!(error instanceof JobFileError)) throw error;
      const { place } = error;
      const at = place ? ` (line ${place.line}, column ${place.column})` : "";
      throw new InvalidRequestError("job", `${error.problem}${at}`);
    }
  }
}

/**
 * Multipart: a field `job` (the job file as JSON or YAML) first, then one file part per input,
 * named by its path.
 */
async function submitMultipart(
  request: FastifyRequest,
  { ports, blobs, maxUploadBytes }: { ports: ApiPorts; blobs: BlobStore; maxUploadBytes: number },
  { owner, dependencyOwner, allowedQos }: Submitter,
  key: string | null,
) {
  let id: string | null = null;
  let received = false;
  try {
    const submitted = await ports.jobs.submitWithEvents(
      { owner, submitKey: key, dependencyOwner, allowedQos },
      async (newId) => {
        received = true;
        let spec: JobSpec | null = null;
        const stored = new Set<string>();
        for await (const part of multipartParts(request)) {
          if (part.type === "field") {
            if (part.fieldname !== "job") continue;
            if (part.valueTruncated) throw jobFileTooLarge();
            keepJobFileText(request, String(part.value));
            const field = parseJobField(String(part.value));
            refuseWorkflowFile(field);
            spec = validateJobSpec(field);
            id = await newId();
            continue;
          }
          if (!spec || !id) {
            part.file.resume();
            throw new InvalidRequestError("job", "the job field must come before the input files");
          }
          const path = part.fieldname;
          if (!spec.inputs.includes(path)) {
            part.file.resume();
            throw new InvalidRequestError(
              "inputs",
              `${path} was uploaded but is not one of the job's inputs`,
            );
          }
          try {
            await blobs.write(inputKey(id, path), limitUpload(part.file, maxUploadBytes, `input ${path}`));
          } catch (error) {
            throw uploadError(error, part.file, `input ${path}`, maxUploadBytes);
          }
          stored.add(path);
        }
        if (!spec || !id) throw new InvalidRequestError("job", "the job field is missing");
        const missing = spec.inputs.findIndex((path) => !stored.has(path));
        if (missing >= 0) {
          throw new InvalidRequestError(
            `inputs[${missing}]`,
            `${spec.inputs[missing]}: file was not uploaded`,
          );
        }
        return { spec: await withParamsFile(spec, blobs, id), inputs: [...spec.inputs], id };
      },
    );
    // A repeated submit: its inputs are in already, the parts are read past, not stored again.
    if (!received)
      for await (const part of multipartParts(request)) if (part.type === "file") part.file.resume();
    return submitted;
  } catch (error) {
    if (id) await blobs.deletePrefix(jobPrefix(id));
    throw error;
  }
}

/**
 * Why an input's upload failed: too large (413), a body cut short or malformed (400, the request's
 * fault: the file's stream failed, before or while it was read), or else the blob store's (500).
 */
export function uploadError(error: unknown, file: Readable, what: string, maxUploadBytes: number): Error {
  if (error instanceof UploadTooLargeError) return error;
  const broken = file.errored;
  // The parser's own size limit (the same number) says so with a 413 of its own.
  if ((broken as { statusCode?: number } | null)?.statusCode === 413)
    return uploadTooLarge(what, maxUploadBytes);
  if (broken) return malformedMultipart(broken);
  if (file.destroyed && !file.readableEnded) return malformedMultipart(error);
  return error as Error;
}

/** A multipart body the parser could not read: a 400 that says so. */
function malformedMultipart(error: unknown): InvalidRequestError {
  return new InvalidRequestError("body", `malformed multipart body: ${(error as Error).message}`);
}

/** The request's parts; a body the parser cannot read is the request's fault (400), not the server's. */
export async function* multipartParts(request: FastifyRequest) {
  const iterator = request.parts()[Symbol.asyncIterator]();
  for (;;) {
    let next: Awaited<ReturnType<typeof iterator.next>>;
    try {
      next = await iterator.next();
    } catch (error) {
      // Limits (file count, size) come with their own 4xx status: those pass as they are.
      if ((error as { statusCode?: number }).statusCode) throw error;
      throw malformedMultipart(error);
    }
    if (next.done) return;
    yield next.value;
  }
}

/**
 * The log of the task's latest attempt (or a given one); with follow, that attempt until it ends
 * (not a later one: the client asks for the next attempt by its number).
 */
async function* followLog(
  blobs: BlobStore,
  jobId: string,
  readTask: () => Promise<TaskRead>,
  { task: taskIndex, stream, rank }: { task: number; stream: "stdout" | "stderr"; rank: number },
  follow: boolean,
  wanted: number | null,
  request: FastifyRequest,
): AsyncGenerator<Buffer> {
  let offset = 0;
  let closed = false;
  let pinned = wanted;
  request.raw.on("close", () => {
    closed = true;
  });
  for (;;) {
    const { task, attempts } = await readTask();
    const attempt =
      pinned === null ? attempts[attempts.length - 1] : attempts.find((each) => each.number === pinned);
    // Followed, the attempt first found is the one read to its end: a later one's bytes are not
    // read at this one's offset (a client follows the next attempt by its number).
    if (attempt) pinned = attempt.number;
    if (!attempt) {
      if (!follow || closed || task.state !== "pending") return;
      await sleep(LOG_POLL_MS);
      continue;
    }
    const ended = attempt.state === "ended";
    const key = logKey(jobId, taskIndex, attempt.number, stream, rank);
    const info = await blobs.stat(key);
    if (info && info.bytes > offset) {
      for await (const chunk of blobs.read(key, offset)) {
        offset += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
    }
    // The agent sends the last bytes before it reports the end, so once ended the log is complete.
    if (!follow || closed || ended) return;
    await sleep(LOG_POLL_MS);
  }
}
