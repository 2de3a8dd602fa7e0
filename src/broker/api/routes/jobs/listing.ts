// GET /api/v1/jobs (the jobs in id order, a page at a time) and GET /api/v1/jobs/{id} (one job
// with its tasks, attempts and events).

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errors } from "../../../../common/api/errors.ts";
import { jobSchema, jobSummarySchema } from "../../../../common/api/jobs.ts";
import { json } from "../../../../common/api/json-answer.ts";
import { nameMatcher } from "../../../../common/model/name-pattern.ts";
import type { JobHeader } from "../../../../common/model/records.ts";
import { isEndedState, JOB_STATES } from "../../../../common/model/states.ts";
import { seesAllJobs } from "../../access.ts";
import { flag, jobParams } from "../../requests.ts";
import { jobHeadView, jobSummaryView, jobView } from "../../views.ts";
import type { JobRouteDeps } from "./deps.ts";

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

export function registerJobListingRoutes(app: FastifyInstance, { ports }: JobRouteDeps): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

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
        return jobHeadView(head, request.query.events ? await ports.read.jobEvents(id) : null);
      }
      const job = await ports.read.readJob(id);
      const events = request.query.events ? await ports.read.jobEvents(id) : null;
      return jobView(job, events);
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
