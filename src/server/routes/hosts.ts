// /api/v1/hosts: the pool's hosts with their facts; drain.

import type { FastifyInstance } from "fastify";
import type { Core } from "../core.ts";
import { hostView } from "../views.ts";

export function registerHostRoutes(app: FastifyInstance, core: Core): void {
  app.get("/api/v1/hosts", async () => core.listHosts().map(hostView));

  app.post("/api/v1/hosts/:name/drain", async (request) => {
    const { name } = request.params as { name: string };
    await core.drain(name);
    return hostView(core.listHosts().find((host) => host.name === name)!);
  });

  app.get("/api/v1/jobs/:id/explain", async (request) => {
    const { id } = request.params as { id: string };
    const job = core.job(id);
    return { id, state: job.record.state, ...core.explain(id) };
  });
}
