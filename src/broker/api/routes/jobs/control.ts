// What is done to a job: remove it (DELETE), update it (PATCH), cancel, retry, hold, release and
// migrate it. Each answers the job as the change left it, durable.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errors } from "../../../../common/api/errors.ts";
import { jobSchema, removedSchema } from "../../../../common/api/jobs.ts";
import { json } from "../../../../common/api/json-answer.ts";
import { jobUpdateBody, parseJobUpdate } from "../../../../common/model/job-update.ts";
import { JOB_STATES } from "../../../../common/model/states.ts";
import { parseTaskList, TaskListError } from "../../../../common/model/task-list.ts";
import { InvalidRequestError } from "../../../reactor/errors.ts";
import { actorOf } from "../../auth.ts";
import { jobParams } from "../../requests.ts";
import { submitterOf } from "../../submitter.ts";
import { jobHeadView, jobView } from "../../views.ts";
import type { JobRouteDeps } from "./deps.ts";

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

/** A control's schema: the job's id, the body, and the job (without its tasks) answered. */
function controlSchema<Body extends z.ZodType>(summary: string, body: Body) {
  return {
    summary,
    params: jobParams,
    body,
    response: {
      200: json(jobSchema, "the job, without its tasks"),
      ...errors(400, 401, 403, 404, 409),
    },
  };
}

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

export function registerJobControlRoutes(app: FastifyInstance, { ports, files }: JobRouteDeps): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

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
      await files.deleteJobFiles(id);
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
      return jobView(job, await ports.read.jobEvents(id), false);
    },
  );

  api.post(
    "/api/v1/jobs/:id/cancel",
    {
      schema: controlSchema(
        "Cancel a job, or some of its tasks: pending tasks never start, running attempts are stopped (their outcome `cancelled`)",
        cancelBody,
      ),
    },
    async (request) => {
      const { id } = request.params;
      const tasks = request.body?.tasks;
      const head =
        tasks === undefined
          ? await ports.jobs.cancel(id, actorOf(request))
          : await ports.jobs.cancelTasks(id, taskIndexes(tasks), actorOf(request));
      return jobHeadView(head, await ports.read.jobEvents(id));
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
      const view = jobView(outcome.job, await ports.read.jobEvents(id), false);
      return { ...view, retried: outcome.retry, skipped: outcome.skipped };
    },
  );

  api.post(
    "/api/v1/jobs/:id/hold",
    {
      schema: controlSchema(
        "Hold a job: it does not start; running attempts stop (preempted, reason held); `reason` is kept in its hold event",
        holdBody,
      ),
    },
    async (request) => {
      const { id } = request.params;
      const job = await ports.jobs.hold(id, actorOf(request), request.body?.reason);
      return jobHeadView(job, await ports.read.jobEvents(id));
    },
  );

  api.post(
    "/api/v1/jobs/:id/release",
    { schema: controlSchema("Release a held job (one that is not held is answered as it is)", emptyBody) },
    async (request) => {
      const { id } = request.params;
      return jobHeadView(await ports.jobs.release(id, actorOf(request)), await ports.read.jobEvents(id));
    },
  );

  api.post(
    "/api/v1/jobs/:id/migrate",
    {
      schema: controlSchema(
        "Move a running job to another host (or the one named), resuming from its checkpoint; 409 without `to` when no other host matches the job and has room now",
        migrateBody,
      ),
    },
    async (request) => {
      const { id } = request.params;
      const job = await ports.jobs.migrate(id, request.body?.to ?? null, actorOf(request));
      return jobView(job, await ports.read.jobEvents(id), false);
    },
  );
}
