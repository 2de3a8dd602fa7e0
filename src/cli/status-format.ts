// `steward status ID...`: what it prints for the states it was answered, and its exit code. Pure;
// commands/status.ts does the asking.

import type { JobState } from "../common/model/states.ts";
import { isWorkflowId } from "../common/model/workflow-id.ts";

/** state: `ID STATE` lines; snakemake: the words of Snakemake's --cluster-status. */
export const STATUS_FORMATS = ["state", "snakemake"] as const;
export type StatusFormat = (typeof STATUS_FORMATS)[number];

/** The three words a Snakemake --cluster-status command may print. */
export type SnakemakeStatus = "success" | "failed" | "running";

/** The exit codes of `steward status`. */
export const STATUS_EXIT = {
  /** Every job named exists (with --format snakemake: every id was answered a word). */
  found: 0,
  /** A job named does not exist (or is another user's): named on stderr, the others printed. */
  missing: 1,
  /** Nothing could be asked (the server unreachable, the token refused, ...): nothing printed. */
  unanswered: 3,
} as const;

/**
 * A state as Snakemake reads a job: `success` once it succeeded; `failed` once it failed or was
 * cancelled, or when there is no such job (null: it can never succeed); `running` while it may
 * still run (held, waiting, pending, running: a held job waits for its release).
 */
export function snakemakeStatus(state: JobState | null): SnakemakeStatus {
  switch (state) {
    case "succeeded":
      return "success";
    case "failed":
    case "cancelled":
    case null:
      return "failed";
    case "held":
    case "waiting":
    case "pending":
    case "running":
      return "running";
  }
}

export interface StatusReport {
  /** The lines for stdout, in the order the ids were named. */
  lines: string[];
  /** The lines for stderr: each id named that does not exist. */
  notes: string[];
  exitCode: number;
}

/**
 * What `steward status` prints for `ids` (each once, in order) given each one's state (null or
 * absent: no such job or workflow). The state format prints `ID STATE` for each that exists and
 * names the others on stderr (exit 1); the snakemake format prints the word alone for one id and
 * `ID WORD` for several, a missing job being `failed` with exit 0, since Snakemake stops the whole
 * workflow on a status command's non-zero exit.
 */
export function statusReport(
  ids: readonly string[],
  states: ReadonlyMap<string, JobState | null>,
  format: StatusFormat,
): StatusReport {
  const lines: string[] = [];
  const notes: string[] = [];
  for (const id of ids) {
    const state = states.get(id) ?? null;
    const absent = `no ${isWorkflowId(id) ? "workflow" : "job"} ${id}`;
    if (format === "snakemake") {
      const word = snakemakeStatus(state);
      lines.push(ids.length === 1 ? word : `${id} ${word}`);
      if (state === null) notes.push(`${absent} (${word} for Snakemake)`);
    } else if (state === null) notes.push(absent);
    else lines.push(`${id} ${state}`);
  }
  const missing = format === "state" && notes.length > 0;
  return { lines, notes, exitCode: missing ? STATUS_EXIT.missing : STATUS_EXIT.found };
}
