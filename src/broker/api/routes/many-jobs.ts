// /api/v1/jobs/states and /api/v1/jobs/cancel: many jobs named in one request, as workflow engines
// poll and cancel theirs (`steward status ID...`, `steward cancel ID...`). A job the caller may not
// see (another user's, for a user's token) is answered as absent, as the job routes answer it 404.

import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errors } from "../../../common/api/errors.ts";
import {
  cancelJobsBody,
  type JobStates,
  jobIdsQueryValue,
  jobStatesSchema,
  MAX_JOBS_NAMED,
} from "../../../common/api/job-states.ts";
import { json } from "../../../common/api/json-answer.ts";
import { isEndedState } from "../../../common/model/states.ts";
import { NotFoundError } from "../../reactor/errors.ts";
import { seesAllJobs } from "../access.ts";
import { actorOf } from "../auth.ts";
import type { ApiPorts } from "../ports.ts";

export function registerManyJobRoutes(app: FastifyInstance, ports: ApiPorts): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  /** Each id once, in the order first named, with its state (null: absent for this caller). */
  const statesOf = (ids: readonly string[], visible: (id: string) => boolean): JobStates => ({
    jobs: ids.map((id) => ({ id, state: visible(id) ? (ports.read.header(id)?.state ?? null) : null })),
  });

  /** Whether the caller sees job `id`: it exists, and is theirs unless they see every job. */
  const visibleTo = (request: FastifyRequest) => {
    const principal = request.principal;
    const viewer = principal && !seesAllJobs(principal.role) ? principal.user : null;
    return (id: string) => {
      const owner = ports.read.jobOwner(id);
      return owner !== undefined && (viewer === null || owner === viewer);
    };
  };

  api.get(
    "/api/v1/jobs/states",
    {
      schema: {
        summary: `The state of each job named (up to ${MAX_JOBS_NAMED}), in one request: what a workflow engine polls`,
        querystring: z.object({ ids: jobIdsQueryValue }),
        response: {
          200: json(jobStatesSchema, "each job named with its state (null: no such job)"),
          ...errors(400, 401),
        },
      },
    },
    async (request) => statesOf(unique(request.query.ids), visibleTo(request)),
  );

  api.post(
    "/api/v1/jobs/cancel",
    {
      schema: {
        summary: `Cancel the jobs named (up to ${MAX_JOBS_NAMED}), each as POST /api/v1/jobs/{id}/cancel does; one that has ended is left as it is, one that does not exist is answered with state null`,
        body: cancelJobsBody,
        response: {
          200: json(
            jobStatesSchema,
            "each job named with its state once the cancels are durable (a job whose running attempts are still stopping reads running until they have; null: no such job)",
          ),
          ...errors(400, 401, 403),
        },
      },
    },
    async (request) => {
      const ids = unique(request.body.ids);
      const visible = visibleTo(request);
      const by = actorOf(request);
      // Dependants first (a job's dependencies have smaller ids), so that each ends by this cancel
      // and not as a dependency's failure; all are handled now, in this order, and committed together.
      const open = ids
        .filter((id) => visible(id) && !isEnded(ports.read.header(id)?.state))
        .sort((a, b) => Number(b) - Number(a));
      await Promise.all(
        open.map((id) =>
          ports.jobs.cancel(id, by).catch((error: unknown) => {
            // Removed meanwhile: answered as absent below.
            if (!(error instanceof NotFoundError)) throw error;
          }),
        ),
      );
      return statesOf(ids, visible);
    },
  );
}

function isEnded(state: Parameters<typeof isEndedState>[0] | undefined): boolean {
  return state !== undefined && isEndedState(state);
}

function unique(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}
