// /api/v1/shares: the fair-share tree with each account's and user's shares, usage and factor
// (`steward share`). An admin or a reader sees every line; a user sees their own line and the
// accounts above it, not the other users.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { errors } from "../../../common/api/errors.ts";
import { json } from "../../../common/api/json-answer.ts";
import { sharesSchema } from "../../../common/api/shares.ts";
import { seesAllJobs } from "../access.ts";
import type { ApiPorts } from "../ports.ts";

export function registerShareRoutes(app: FastifyInstance, ports: ApiPorts): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get(
    "/api/v1/shares",
    {
      schema: {
        summary:
          "The fair-share tree: each account's and user's shares (raw and normalised), decayed usage and factor; a user sees their own line and the accounts above it",
        response: { 200: json(sharesSchema, "the tree as lines"), ...errors(401) },
      },
    },
    async (request) => {
      const principal = request.principal;
      const viewer = principal && !seesAllJobs(principal.role) ? principal.user : undefined;
      const shares = ports.read.shares(viewer);
      return { ...shares, at: new Date(shares.at).toISOString() };
    },
  );
}
