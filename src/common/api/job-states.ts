// Many jobs named at once, as workflow engines ask (Snakemake's --cluster-status and
// --cluster-cancel, Toil's batch systems): each job's state word, and the cancel of a list of jobs,
// in one request each (`steward status`, `steward cancel ID...`).

import { z } from "zod";
import { JOB_STATES } from "../model/states.ts";

/** The most job ids one request may name (a client splits a longer list into requests of this many). */
export const MAX_JOBS_NAMED = 1000;

/** The longest job id a request may name (ids are numbers; this bounds what is read of a wrong one). */
export const MAX_JOB_ID_LENGTH = 64;

export const jobStateSchema = z
  .object({
    id: z.string(),
    state: z.enum(JOB_STATES).nullable().meta({
      description:
        "the job's state; null when there is no such job (never made, removed, or another user's, as a user's token sees it)",
    }),
  })
  .meta({ id: "JobState" });
export type JobStateAnswer = z.infer<typeof jobStateSchema>;

export const jobStatesSchema = z
  .object({
    jobs: z
      .array(jobStateSchema)
      .meta({ description: "one entry per id named, in the order named (an id named twice: once)" }),
  })
  .meta({ id: "JobStates" });
export type JobStates = z.infer<typeof jobStatesSchema>;

/** A job id as a request names it among others. */
const namedJobId = z.string().min(1).max(MAX_JOB_ID_LENGTH);

/** `POST /api/v1/jobs/cancel`: the jobs to cancel. */
export const cancelJobsBody = z.object({
  ids: z
    .array(namedJobId)
    .min(1)
    .max(MAX_JOBS_NAMED)
    .meta({ description: `the jobs to cancel (1 to ${MAX_JOBS_NAMED} ids)` }),
});
export type CancelJobsRequest = z.infer<typeof cancelJobsBody>;

/**
 * `GET /api/v1/jobs/states?ids=3,4,5`: the ids of the query, comma-separated, as a list (the same
 * bounds as the cancel's body); a list out of bounds is refused naming why.
 */
export const jobIdsQueryValue = z
  .string()
  .min(1)
  .transform((value, context) => {
    const ids = value.split(",");
    if (ids.length > MAX_JOBS_NAMED)
      context.addIssue({
        code: "custom",
        message: `at most ${MAX_JOBS_NAMED} ids a request, not ${ids.length}`,
      });
    const wrong = ids.find((id) => id.length === 0 || id.length > MAX_JOB_ID_LENGTH);
    if (wrong !== undefined)
      context.addIssue({
        code: "custom",
        message:
          wrong.length === 0
            ? "an empty id (ids are separated by single commas)"
            : `an id of more than ${MAX_JOB_ID_LENGTH} characters`,
      });
    return ids;
  })
  .meta({ description: `job ids, comma-separated (1 to ${MAX_JOBS_NAMED}): 3,4,5` });
