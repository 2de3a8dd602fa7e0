// /api/v1/hosts: the pool's hosts with their facts; drain. And why a job is not running.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { PoolNote } from "../../pools/pool-manager.ts";
import { type Core, NotFoundError } from "../../server/core.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import { seesAllJobs } from "../access.ts";
import { jobParams } from "../requests.ts";
import { errors, explanationSchema, hostSchema, json } from "../schemas.ts";
import { hostView } from "../views.ts";

export function registerHostRoutes(
  app: FastifyInstance,
  core: Core,
  explainPools: (job: JobEntry) => PoolNote[],
): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get(
    "/api/v1/hosts",
    {
      schema: {
        summary: "Hosts with their facts and state",
        response: { 200: json(z.array(hostSchema), "every host"), ...errors(401) },
      },
    },
    async () => core.listHosts().map(hostView),
  );

  api.post(
    "/api/v1/hosts/:name/drain",
    {
      schema: {
        summary: "Let a host finish its work and take no more",
        params: z.object({ name: z.string().min(1).meta({ description: "the agent's --name" }) }),
        body: z.object({}).nullish(),
        response: { 200: json(hostSchema, "the host, draining"), ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { name } = request.params;
      await core.drain(name);
      const host = core.listHosts().find((candidate) => candidate.name === name);
      if (!host) throw new NotFoundError(`no host ${name}`);
      return hostView(host);
    },
  );

  api.get(
    "/api/v1/jobs/:id/explain",
    {
      schema: {
        summary: "Why a job is not running: what keeps it waiting, then host by host",
        params: jobParams,
        response: { 200: json(explanationSchema, "the reasons, host by host"), ...errors(401, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const job = await core.readJob(id);
      // A user sees other users' jobs neither named nor described (admins and readers see all).
      const { principal } = request;
      const viewer = principal && !seesAllJobs(principal.role) ? principal.user : null;
      return { id, state: job.record.state, ...(await core.explain(id, viewer)), pools: explainPools(job) };
    },
  );
}
