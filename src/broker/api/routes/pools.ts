// /api/v1/pools: the pools backed by a batch system, with their state and pilots.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errors } from "../../../common/api/errors.ts";
import { json } from "../../../common/api/json-answer.ts";
import { poolSchema } from "../../../common/api/pools.ts";
import type { PoolStatus } from "../../pools/pool-manager.ts";

export function registerPoolRoutes(app: FastifyInstance, pools: () => PoolStatus[]): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get(
    "/api/v1/pools",
    {
      schema: {
        summary: "Pools backed by a batch system: state (ok, or unavailable and why) and pilots",
        response: { 200: json(z.array(poolSchema), "every pool of the pools file"), ...errors(401) },
      },
    },
    async () => pools(),
  );
}
