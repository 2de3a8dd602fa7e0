// What requests carry besides bodies: path parameters and query strings, as zod schemas. A value
// that does not fit is answered 400 naming it (see validationAnswer).

import type { FastifySchemaValidationError } from "fastify";
import { z } from "zod";
import type { ErrorAnswer } from "../../common/api/errors.ts";
import { checkpointPathProblem } from "../../common/model/checkpoint-paths.ts";

/** A yes/no query flag: 1 or true, 0 or false. */
export const flag = (fallback: boolean, description: string) =>
  z
    .enum(["1", "true", "0", "false"])
    .optional()
    .transform((value) => (value === undefined ? fallback : value === "1" || value === "true"))
    .meta({ description });

/** A task index, an attempt number: a whole number in a path or a query. */
export const wholeNumber = (min = 0) => z.coerce.number<string>().int().min(min);

/** A user's name: a local account's name may be mapped from it (agents' --run-as-owner). */
export const USER_NAME = /^[A-Za-z0-9_][\w.@-]{0,63}$/;

export const jobParams = z.object({ id: z.string().min(1).meta({ description: "job id" }) });

export const taskParams = jobParams.extend({ task: wholeNumber().meta({ description: "task index" }) });

export const attemptParams = taskParams.extend({
  attempt: wholeNumber(1).meta({ description: "attempt number" }),
});

/**
 * A file path at the end of the URL (fastify's `*`): the strict form checkpoint paths have
 * (relative, in normal form, no NUL, Linux's length limits), and `/` as the only separator (a
 * blob key's); anything else names no file of a job, and answers 400.
 */
export const filePath = z
  .string()
  .min(1)
  .superRefine((path, context) => {
    const problem =
      checkpointPathProblem(path) ?? (path.includes("\\") ? "must use / as the separator" : null);
    if (problem) context.addIssue({ code: "custom", message: `${JSON.stringify(path)} ${problem}` });
  })
  .meta({ description: "the file's path, relative to its folder" });

export const sha256 = z
  .string()
  .regex(/^[0-9a-f]{64}$/, "not a SHA-256 in hex")
  .meta({ description: "SHA-256 of the content, in hex" });

/** The 400 answer to a request whose params, query, headers or body do not fit their schema. */
export function validationAnswer(
  context: string | undefined,
  errors: readonly FastifySchemaValidationError[],
): ErrorAnswer {
  const first = errors[0];
  const field = fieldName(first?.instancePath ?? "");
  const message = first?.message ?? "invalid request";
  const where = field || context || "request";
  return { error: { code: "invalid", field: where, message: `${where}: ${message}` } };
}

/** "/files/0/path" -> "files[0].path", the way job file errors name fields. */
function fieldName(instancePath: string): string {
  return instancePath
    .split("/")
    .filter(Boolean)
    .reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out ? `${out}.${part}` : part), "");
}
