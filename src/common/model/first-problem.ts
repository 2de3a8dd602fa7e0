// The first problem of a zod error, as a field path and a message: what every file the server reads
// (job files, workflow files, pools, shares, QoS) reports of a value its schema refused.

import type { z } from "zod";
import { formatFieldPath } from "./jobfile-error.ts";
import { nearestKey } from "./key-suggestion.ts";
import { knownKeysAt } from "./schema-keys.ts";

/** What firstProblem may say more of a problem when it knows the value checked and its schema. */
export interface ProblemContext {
  /** The value checked: a field it lacks is `required`. */
  input: unknown;
  /** Its schema: an unknown key names the nearest known one (`did you mean command?`). */
  schema?: z.ZodType;
  /** Other names for keys, by the mapping's path ("" the top, `resources`): JOB_FILE_KEY_ALIASES. */
  aliases?: Readonly<Record<string, Readonly<Record<string, string>>>>;
}

/**
 * The problem a zod error reports first, as a field path (`inputs[1]`, `resources.gpus`) and a
 * message. An unknown key says most about a mistake, even when a required key beside it is missing.
 * With the value checked, a field it lacks is `required`; with its schema, an unknown key names
 * the known key it was most likely meant to be.
 */
export function firstProblem(
  error: z.ZodError,
  context?: ProblemContext,
): { field: string; path: (string | number)[]; message: string } {
  const found = unionBranch(firstOf(error.issues), []);
  const at = found.path.map((part) => (typeof part === "number" ? part : String(part)));
  const { issue } = found;
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0];
    const path = [...at, key];
    let message = "unknown key";
    if (context?.schema) {
      const aliases = context.aliases?.[formatFieldPath(at)] ?? {};
      const meant = nearestKey(key, knownKeysAt(context.schema, at), aliases);
      if (meant !== null) message += ` (did you mean ${meant}?)`;
    }
    return { field: formatFieldPath(path), path, message };
  }
  const missing =
    context !== undefined &&
    (issue.code === "invalid_type" || issue.code === "invalid_union") &&
    at.length > 0 &&
    lacks(context.input, at);
  return { field: formatFieldPath(at), path: at, message: missing ? "required" : issue.message };
}

/** Whether the value has a mapping at the path's parent without the path's last key. */
function lacks(input: unknown, path: readonly (string | number)[]): boolean {
  let value: unknown = input;
  for (const part of path.slice(0, -1)) {
    if (value === null || typeof value !== "object") return false;
    value = (value as Record<string | number, unknown>)[part];
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  return (value as Record<string | number, unknown>)[path[path.length - 1]] === undefined;
}

type Issue = z.core.$ZodIssue;

function firstOf(issues: readonly Issue[]): Issue {
  return issues.find((candidate) => candidate.code === "unrecognized_keys") ?? issues[0];
}

/**
 * A union's problem (`array: N` or a mapping; a parameter a string or a mapping) as the form the
 * value was meant to be: the branch whose problem lies deepest in the value, or, when none goes
 * deeper than the value itself, the forms it could have had (`expected string, number or boolean`).
 */
function unionBranch(issue: Issue, prefix: PropertyKey[]): { path: PropertyKey[]; issue: Issue } {
  const path = [...prefix, ...issue.path];
  if (issue.code !== "invalid_union") return { path, issue };
  let best: { path: PropertyKey[]; issue: Issue } | null = null;
  for (const branch of issue.errors) {
    if (branch.length === 0) continue;
    const found = unionBranch(firstOf(branch), path);
    if (!best || found.path.length > best.path.length) best = found;
  }
  if (!best || best.path.length > path.length) return best ?? { path, issue };
  const expected = issue.errors.flatMap((branch) =>
    branch[0]?.code === "invalid_type" ? [String(branch[0].expected)] : [],
  );
  if (expected.length !== issue.errors.length) return best;
  const forms =
    expected.length > 1 ? `${expected.slice(0, -1).join(", ")} or ${expected.at(-1)}` : expected[0];
  return { path, issue: { ...issue, message: `expected ${forms}` } };
}
