// /api/v1/jobs: submit (jobs/submit.ts), list and show (jobs/listing.ts), remove, update and
// control (jobs/control.ts), tasks (jobs/tasks.ts), logs and outputs (jobs/files.ts). Registered in
// this order, the order the OpenAPI document lists them in.

import type { FastifyInstance } from "fastify";
import { registerJobControlRoutes } from "./jobs/control.ts";
import type { JobRouteDeps } from "./jobs/deps.ts";
import { registerJobFileRoutes } from "./jobs/files.ts";
import { registerJobListingRoutes } from "./jobs/listing.ts";
import { registerJobSubmitRoute } from "./jobs/submit.ts";
import { registerJobTaskRoutes } from "./jobs/tasks.ts";

export function registerJobRoutes(app: FastifyInstance, deps: JobRouteDeps): void {
  registerJobSubmitRoute(app, deps);
  registerJobListingRoutes(app, deps);
  registerJobControlRoutes(app, deps);
  registerJobTaskRoutes(app, deps);
  registerJobFileRoutes(app, deps);
}
