// The job file in the API: what a submit takes, what a job's spec shows, and what a dry run answers.

import { z } from "zod";
import { type JobSpec, jobSpecSchema } from "../model/job-spec.ts";
import { explanationSchema } from "./explanation.ts";

/**
 * The job file: the document's JobFileInput is what a submit takes,
 * JobFile what it became, with every default filled in.
 */
export const jobFileSchema = jobSpecSchema.meta({ id: "JobFile", description: "the job file" });

/**
 * A job's `spec`: the job file as accepted. Not checked again on the way out: it passed the rules
 * of the day it was submitted, and a later, stricter rule must not make the job unreadable.
 */
export const acceptedJobFile = z
  .custom<JobSpec>((value) => typeof value === "object" && value !== null)
  .meta({ $ref: "#/components/schemas/JobFile" });

/** What a dry run of a submit answers: the job file as the server reads it, nothing created. */
export const checkedJobFileSchema = z
  .object({
    spec: acceptedJobFile.meta({ description: "the job file with every default filled in" }),
    explanation: explanationSchema.optional().meta({
      description:
        "with explain=1: what explain would say of the job submitted now (its id is `dry-run`; no job is made)",
    }),
  })
  .meta({ id: "CheckedJobFile" });
export type CheckedJobFile = z.infer<typeof checkedJobFileSchema>;
