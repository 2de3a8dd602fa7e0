// /api/v1/accounting: ended attempts with what they used (`steward acct`), read from the store:
// those of the jobs it holds, and those kept of removed jobs for the server's --accounting-days.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { accountingRowSchema } from "../../../common/api/accounting.ts";
import { errors } from "../../../common/api/errors.ts";
import { json } from "../../../common/api/json-answer.ts";
import { seesAllJobs } from "../access.ts";
import type { ReadModel } from "../ports.ts";
import { accountingRowView } from "../views.ts";

export const MAX_ACCOUNTING_ROWS = 100_000;

const accountingQuery = z.object({
  user: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "only this owner's attempts (a user token sees its own whatever this says)" }),
  since: z.iso
    .datetime()
    .optional()
    .meta({ description: "only attempts that ended at or after this time (default: every one kept)" }),
  limit: z.coerce
    .number<string>()
    .int()
    .min(1)
    .max(MAX_ACCOUNTING_ROWS)
    .default(10_000)
    .meta({ description: `at most this many rows, oldest end first (1..${MAX_ACCOUNTING_ROWS})` }),
});

export function registerAccountingRoutes(app: FastifyInstance, read: Pick<ReadModel, "accounting">): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get(
    "/api/v1/accounting",
    {
      schema: {
        summary:
          "Ended attempts with their usage (CPU time, peak memory, wall time, exit), oldest end first; kept after the job is removed",
        querystring: accountingQuery,
        response: { 200: json(z.array(accountingRowSchema), "the attempts"), ...errors(400, 401) },
      },
    },
    async (request) => {
      const principal = request.principal;
      const owner = principal && !seesAllJobs(principal.role) ? principal.user : request.query.user;
      const rows = await read.accounting({
        since: request.query.since === undefined ? 0 : Date.parse(request.query.since),
        ...(owner === undefined ? {} : { owner }),
        limit: request.query.limit,
      });
      return rows.map(accountingRowView);
    },
  );
}
