// An update of a job that has not started (`steward update`, PATCH /api/v1/jobs/{id}): the job
// file's fields it may change, sent as a JSON merge patch of the job file (null removes an
// optional field); which jobs may take which fields (updateRefusal); and the new job file, checked
// by the very function a submit's is (validateJobSpec), so that an update is refused with the
// message the submit of that job file would get.

import { z } from "zod";
import { firstProblem } from "./first-problem.ts";
import type { JobSpec } from "./job-spec.ts";
import { validateJobSpec } from "./job-spec.ts";
import { JobFileError } from "./jobfile-error.ts";
import type { JobState } from "./states.ts";
import { UPDATE_FIELDS, type UpdateChange, type UpdateField } from "./update-fields.ts";

/**
 * What may change while some tasks of an array run: the job's place in its owner's queue, and how
 * many of its tasks may run at once (a lower throttle stops none: fewer start until it is met). The
 * running tasks keep the cpus, memory, requirements, rank and time limit they were placed with,
 * which their accounting, their hosts' room and the rescheduler read from the job.
 */
export const FIELDS_WHILE_RUNNING: readonly UpdateField[] = ["priority", "array.parallel"];

/** What only an array has: refused for a single job, whatever its state. */
export const ARRAY_FIELDS: readonly UpdateField[] = ["array.parallel"];

/**
 * What may not change once a task has run: the cpus its ended attempts' cpu time is counted at
 * (fair share's history is summed at the job's cpus when a server starts).
 */
export const FIELDS_FIXED_ONCE_RUN: readonly UpdateField[] = ["resources.cpus"];

const expression = (purpose: string) =>
  z
    .string()
    .nullable()
    .optional()
    .meta({ description: `a new ${purpose} (CEL, checked as at submit); null removes it` });

const updateShape = {
  priority: z.int().optional().meta({ description: "the job's new priority" }),
  qos: z
    .string()
    .optional()
    .meta({ description: "the job's new QoS tier: one its owner may use, checked as at submit" }),
  requirements: expression("requirements expression"),
  rank: expression("rank expression"),
  timeLimitSeconds: z
    .number()
    .nullable()
    .optional()
    .meta({ description: "a new time limit in seconds; null removes it" }),
};
const resourcesShape = {
  cpus: z.int().optional().meta({ description: "slots (cpus) one task takes" }),
  memoryMb: z.number().optional().meta({ description: "memory one task needs, MB (0: no need)" }),
};

const arrayShape = {
  parallel: z
    .int()
    .min(1)
    .nullable()
    .optional()
    .meta({ description: "at most this many of the array's tasks run at once; null removes the limit" }),
};

/** An update as the server takes it: known fields only (parseJobUpdate names an unknown one). */
export const jobUpdateSchema = z.strictObject({
  ...updateShape,
  resources: z.strictObject(resourcesShape).optional(),
  array: z.strictObject(arrayShape).optional(),
});
export type JobUpdate = z.infer<typeof jobUpdateSchema>;

/**
 * The body of PATCH /api/v1/jobs/{id} as the API document shows it: the same fields, with other
 * keys let through to parseJobUpdate, whose message says which fields an update may change.
 */
export const jobUpdateBody = z
  .looseObject({
    ...updateShape,
    resources: z.looseObject(resourcesShape).optional(),
    array: z.looseObject(arrayShape).optional(),
  })
  .meta({
    id: "JobUpdate",
    description:
      "The job file's fields to change, as a JSON merge patch of the job file: those absent stay as they are.",
  });

/** The fields an update may change, as its messages name them: `a, b and c`. */
const FIELD_LIST = `${UPDATE_FIELDS.slice(0, -1).join(", ")} and ${UPDATE_FIELDS.at(-1)}`;

/** Checks an update's shape: known fields, of the right types, at least one. */
export function parseJobUpdate(input: unknown): JobUpdate {
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new JobFileError("", `an update is a mapping of the fields to change (${FIELD_LIST})`);
  const result = jobUpdateSchema.safeParse(input);
  if (!result.success) {
    const { field, message } = firstProblem(result.error);
    if (message === "unknown key") throw new JobFileError(field, `an update may change only ${FIELD_LIST}`);
    throw new JobFileError(field, message);
  }
  if (updatedFields(result.data).length === 0)
    throw new JobFileError("", `nothing to change: give at least one of ${FIELD_LIST}`);
  return result.data;
}

/** The fields an update names, in UPDATE_FIELDS order. */
export function updatedFields(update: JobUpdate): UpdateField[] {
  const named: Record<UpdateField, boolean> = {
    priority: update.priority !== undefined,
    qos: update.qos !== undefined,
    requirements: update.requirements !== undefined,
    rank: update.rank !== undefined,
    "resources.cpus": update.resources?.cpus !== undefined,
    "resources.memoryMb": update.resources?.memoryMb !== undefined,
    timeLimitSeconds: update.timeLimitSeconds !== undefined,
    "array.parallel": update.array?.parallel !== undefined,
  };
  return UPDATE_FIELDS.filter((field) => named[field]);
}

/**
 * The job file after the update, checked as a submit checks a new one: the same messages (a
 * requirements expression that does not compile, names an unknown fact or costs too much is
 * `requirements: ...` as at submit). Throws JobFileError naming the field.
 */
export function updatedSpec(spec: JobSpec, update: JobUpdate): JobSpec {
  const next: Record<string, unknown> = structuredClone(spec);
  for (const key of ["priority", "qos", "requirements", "rank", "timeLimitSeconds"] as const) {
    const value = update[key];
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  if (update.resources) {
    const resources: Record<string, unknown> = { ...spec.resources };
    for (const [key, value] of Object.entries(update.resources))
      if (value !== undefined) resources[key] = value;
    next.resources = resources;
  }
  const parallel = update.array?.parallel;
  if (parallel !== undefined && spec.array) {
    const { parallel: _before, ...array } = spec.array;
    next.array = parallel === null ? array : { ...array, parallel };
  }
  return validateJobSpec(next);
}

/** What a job is, for updateRefusal: its state and how many of its tasks have started. */
export interface UpdateFacts {
  id: string;
  state: JobState;
  /** Cancel was asked. */
  cancelRequested: boolean;
  /** Tasks of the job: more than one makes it an array. */
  tasks: number;
  /** Tasks with an attempt live now (starting, running or stopping). */
  liveTasks: number;
  /** Tasks that have had an attempt (live or ended). */
  startedTasks: number;
}

const ENDED: readonly JobState[] = ["succeeded", "failed", "cancelled"];

/**
 * Why an update of `fields` is refused (a 409's message), or null when it may be made. A job none
 * of whose tasks has started (pending, waiting, held) takes any field. A running single job (one
 * task: a multi-node gang, replicas) takes none. An array with tasks running takes only
 * FIELDS_WHILE_RUNNING, for its tasks not yet started. A job whose tasks have run and stopped
 * takes any field but FIELDS_FIXED_ONCE_RUN. ARRAY_FIELDS are refused for a job of one task.
 */
export function updateRefusal(job: UpdateFacts, fields: readonly UpdateField[]): string | null {
  if (ENDED.includes(job.state))
    return `job ${job.id} is ${job.state}: an ended job cannot be updated (submit it again)`;
  if (job.cancelRequested) return `job ${job.id} is being cancelled: it cannot be updated`;
  const arrayOnly = fields.filter((field) => ARRAY_FIELDS.includes(field));
  if (job.tasks === 1 && arrayOnly.length > 0)
    return `job ${job.id} is not an array: ${arrayOnly.join(", ")} applies to arrays only`;
  if (job.liveTasks > 0) {
    if (job.tasks === 1)
      return (
        `job ${job.id} is ${job.state}: only a job that has not started can be updated ` +
        "(hold it first: its attempt stops, and resumes from its checkpoint on release)"
      );
    const fixed = fields.filter((field) => !FIELDS_WHILE_RUNNING.includes(field));
    if (fixed.length > 0)
      return (
        `job ${job.id} is ${job.state} (${job.liveTasks} of ${job.tasks} tasks): ` +
        `only ${FIELDS_WHILE_RUNNING.join(" and ")} may change while its tasks run, ` +
        `not ${fixed.join(", ")}, which its running tasks were placed with ` +
        "(hold it first, or update it once they end)"
      );
    return null;
  }
  if (job.startedTasks > 0) {
    const fixed = fields.filter((field) => FIELDS_FIXED_ONCE_RUN.includes(field));
    if (fixed.length > 0)
      return (
        `job ${job.id} has tasks that have run: ${fixed.join(", ")} cannot change ` +
        "(their cpu time is counted at the job's cpus); submit it again instead"
      );
  }
  return null;
}

/** What a job's update changes, field by field, leaving out the fields that keep their value. */
export function updateChanges(
  before: { spec: JobSpec; priority: number; requirements: string | null },
  after: JobSpec,
  fields: readonly UpdateField[],
): UpdateChange[] {
  const value = (
    spec: JobSpec,
    priority: number,
    requirements: string | null,
    field: UpdateField,
  ): number | string | null => {
    switch (field) {
      case "priority":
        return priority;
      case "qos":
        return spec.qos;
      case "requirements":
        return requirements;
      case "rank":
        return spec.rank ?? null;
      case "resources.cpus":
        return spec.resources.cpus;
      case "resources.memoryMb":
        return spec.resources.memoryMb;
      case "timeLimitSeconds":
        return spec.timeLimitSeconds ?? null;
      case "array.parallel":
        return spec.array?.parallel ?? null;
    }
  };
  const changes: UpdateChange[] = [];
  for (const field of fields) {
    const from = value(before.spec, before.priority, before.requirements, field);
    const to = value(after, after.priority, after.requirements ?? null, field);
    if (from !== to) changes.push({ field, from, to });
  }
  return changes;
}
