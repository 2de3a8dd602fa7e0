// Why a job waits, and what the next scheduling pass does for it (`steward explain`).

import { z } from "zod";
import { JOB_STATES } from "../model/states.ts";
import { isoTime } from "./iso-time.ts";

const hostReason = z.object({ host: z.string(), reason: z.string() });

export const explanationSchema = z
  .object({
    id: z.string(),
    state: z.enum(JOB_STATES),
    reasons: z.array(z.string()).meta({ description: "what keeps the job waiting before any host" }),
    hosts: z.array(
      hostReason.extend({ eligible: z.boolean().meta({ description: "the host matches the job" }) }),
    ),
    summary: z
      .object({ matching: z.int(), withRoom: z.int() })
      .meta({ description: "how many hosts match the job, and how many of those have room now" }),
    clauses: z.array(z.object({ clause: z.string(), matching: z.int(), failing: z.array(hostReason) })).meta({
      description: "the requirements clause by clause: on how many hosts each holds, and why not elsewhere",
    }),
    ahead: z.array(z.object({ id: z.string(), priority: z.int(), owner: z.string().nullable() })).meta({
      description:
        "jobs that get their turn first and want the hosts this job matches, in turn order (for a user's token, their own jobs only)",
    }),
    othersAhead: z.int().meta({
      description:
        "how many jobs of other users are ahead besides those in `ahead`, which a user's token does not see (0 for an admin or a reader, who see them all)",
    }),
    nextPass: z
      .object({
        starts: z
          .array(z.object({ task: z.int(), hosts: z.array(z.string()), replica: z.boolean() }))
          .meta({ description: "the tasks the next pass starts, each with its hosts (rank 0 first)" }),
        preempts: z.object({ task: z.int(), host: z.string() }).nullable().meta({
          description:
            "the next pass stops a running task of lower priority on this host and keeps its room for this task",
        }),
        line: z.string().meta({ description: "the sentence steward explain prints" }),
      })
      .meta({
        description:
          "what the next scheduling pass does for the job: the scheduler's own pass run dry, so it says what the scheduler does",
      }),
    running: z
      .array(
        z.object({
          task: z.int(),
          attempt: z.int(),
          host: z.string(),
          estimates: z
            .array(z.object({ host: z.string(), gain: z.number() }))
            .nullable()
            .meta({ description: "the last rescheduling estimate, best gain first" }),
          estimatedAt: isoTime.nullable(),
          preemption: z.object({ candidate: z.boolean(), reason: z.string() }).nullable(),
          line: z.string().meta({ description: "the sentence steward explain prints" }),
        }),
      )
      .meta({ description: "the job's running tasks, with what rescheduling and preemption last said" }),
    data: z
      .object({
        inputs: z
          .int()
          .meta({ description: "the job's inputs known by digest (each distinct content once)" }),
        hosts: z.array(z.object({ host: z.string(), bytes: z.int() })).meta({
          description: "the hosts whose content cache holds some of them, and how many bytes: the most first",
        }),
        line: z.string().meta({ description: "the sentence steward explain prints" }),
      })
      .nullable()
      .meta({
        description:
          "data affinity: among hosts with room, after the job's rank, those whose cache holds more bytes of its inputs go first; null when none of its inputs is known by digest (an uploaded input of a job of an earlier version, a URL input without sha256)",
      }),
    pools: z
      .array(
        z.object({
          pool: z.string(),
          state: z.enum(["ok", "unavailable"]),
          line: z.string().meta({ description: "the sentence steward explain prints" }),
        }),
      )
      .meta({
        description: "the batch-backed pools: whether their pilots could run the job, and what they do now",
      }),
  })
  .meta({ id: "Explanation" });
export type Explanation = z.infer<typeof explanationSchema>;
