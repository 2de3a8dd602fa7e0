// An ended attempt with what it used, as `GET /api/v1/accounting` lists it (`steward acct`).

import { z } from "zod";
import { ACCOUNTING_OUTCOMES } from "../model/states.ts";
import { isoTime } from "./iso-time.ts";
import { usageSchema } from "./jobs.ts";

export const accountingRowSchema = z
  .object({
    job: z.string(),
    name: z.string().meta({ description: "the job's name" }),
    owner: z.string(),
    task: z.int(),
    attempt: z.int(),
    host: z.string().meta({ description: "rank 0's host" }),
    outcome: z.enum(ACCOUNTING_OUTCOMES).nullable().meta({
      description: "the attempt's outcome; `held` for one a hold stopped (its outcome `preempted`)",
    }),
    exitCode: z.int().nullable(),
    signal: z.int().nullable().meta({ description: "the signal that ended the job (an exit code of 128+N)" }),
    startedAt: isoTime,
    endedAt: isoTime,
    usage: usageSchema.nullable(),
  })
  .meta({ id: "AccountingRow", description: "an ended attempt with what it used (`steward acct`)" });
export type AccountingRow = z.infer<typeof accountingRowSchema>;
