// /api/v1/hosts: the pool's hosts with their facts; drain. And why a job is not running.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errors } from "../../../common/api/errors.ts";
import { explanationSchema } from "../../../common/api/explanation.ts";
import { hostRemovedSchema, hostSchema } from "../../../common/api/hosts.ts";
import { json } from "../../../common/api/json-answer.ts";
import { NotFoundError } from "../../reactor/errors.ts";
import { seesAllJobs } from "../access.ts";
import { actorOf } from "../auth.ts";
import type { ApiPorts } from "../ports.ts";
import { jobParams } from "../requests.ts";
import { hostView } from "../views.ts";

export function registerHostRoutes(app: FastifyInstance, ports: ApiPorts): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get(
    "/api/v1/hosts",
    {
      schema: {
        summary: "Hosts with their facts and state",
        response: { 200: json(z.array(hostSchema), "every host"), ...errors(401) },
      },
    },
    async () => (await ports.read.readHosts()).map(hostView),
  );

  const hostParams = z.object({ name: z.string().min(1).meta({ description: "the agent's --name" }) });
  const answer = async (name: string) => {
    const host = (await ports.read.readHosts()).find((each) => each.name === name);
    if (!host) throw new NotFoundError(`no host ${name}`);
    return hostView(host);
  };

  // Hosts keep no history of their own: who changed a host is told in the server's log (the
  // jobs whose attempts a removal ends get an event in theirs). A drain or an undrain is logged
  // when it changed the host's state.
  const stateChanges = [
    {
      action: "drain",
      from: "ready",
      done: "drained",
      summary: "Let a host finish its work and take no more",
      response: { 200: json(hostSchema, "the host, draining"), ...errors(400, 401, 403, 404) },
    },
    {
      action: "undrain",
      from: "draining",
      done: "undrained",
      summary: "Let a draining host take work again (a ready host is answered as it is; a lost one: 409)",
      response: { 200: json(hostSchema, "the host, ready"), ...errors(400, 401, 403, 404, 409) },
    },
  ] as const;
  for (const { action, from, done, summary, response } of stateChanges) {
    api.post(
      `/api/v1/hosts/:name/${action}`,
      { schema: { summary, params: hostParams, body: z.object({}).nullish(), response } },
      async (request) => {
        const { name } = request.params;
        const by = actorOf(request);
        const before = ports.read.hostOf(name)?.state;
        await ports.hosts[action](name);
        if (before === from) request.log.info({ host: name, by, action }, `host ${name} ${done} by ${by}`);
        return answer(name);
      },
    );
  }

  api.delete(
    "/api/v1/hosts/:name",
    {
      schema: {
        summary:
          "Forget a lost or disconnected host; its host credentials are revoked (its agent must join again with a join token). A connected host: 409",
        params: hostParams,
        response: { 200: json(hostRemovedSchema, "the host, removed"), ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const { name } = request.params;
      const by = actorOf(request);
      const revokedCredentials = await ports.hosts.removeHost(name, by);
      request.log.info(
        { host: name, by, action: "remove", revokedCredentials },
        `host ${name} removed by ${by}`,
      );
      return { name, removed: true as const, revokedCredentials };
    },
  );

  api.get(
    "/api/v1/jobs/:id/explain",
    {
      schema: {
        summary:
          "Why a job is not running: what keeps it waiting, then host by host; of a job that has ended, how it ended (and no hosts)",
        params: jobParams,
        response: { 200: json(explanationSchema, "the reasons, host by host"), ...errors(401, 404) },
      },
    },
    async (request) => {
      // A user sees other users' jobs neither named nor described (admins and readers see all).
      const { principal } = request;
      const viewer = principal && !seesAllJobs(principal.role) ? principal.user : null;
      return ports.read.explainJob(request.params.id, viewer);
    },
  );
}
