// A job's tasks in short: how many are in each state, and one letter per task.

import { z } from "zod";
import type { JOB_STATES } from "../model/states.ts";

/** A task state's letter in the compact form of GET /api/v1/jobs/:id/task-states. */
export const TASK_STATE_LETTERS = {
  waiting: "w",
  held: "h",
  pending: "p",
  running: "r",
  succeeded: "s",
  failed: "f",
  cancelled: "c",
} as const satisfies Record<(typeof JOB_STATES)[number], string>;

export const taskStatesSchema = z
  .object({
    count: z.int(),
    states: z.string().meta({ description: "one letter per task, task 0 first (see legend)" }),
    legend: z.record(z.string(), z.string()).meta({ description: "each state's letter" }),
  })
  .meta({ id: "TaskStates" });

export const countsSchema = z.object({
  pending: z.int(),
  running: z.int(),
  succeeded: z.int(),
  failed: z.int(),
  cancelled: z.int(),
});
