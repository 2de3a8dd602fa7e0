// What `steward cancel ID ID...` prints for the jobs and workflows it cancelled, and its exit
// code. Pure; cancel-many.ts does the asking.

import type { JobState } from "../common/model/states.ts";
import { isEndedState } from "../common/model/states.ts";
import { isWorkflowId } from "../common/model/workflow-id.ts";
import type { WorkflowActed } from "./workflow-action.ts";

/** The exit codes of `steward cancel` (3, as any command's: the server could not be asked). */
export const CANCEL_EXIT = {
  /** Every job named is cancelled, or had ended already. */
  done: 0,
  /** A job or workflow named does not exist (or is another user's); the others are cancelled. */
  missing: 1,
} as const;

/** The note after a job's state while its running attempts are still stopping. */
export const CANCEL_PENDING_NOTE = " (cancel requested: its running attempts are being stopped)";

export interface CancelReport {
  /** The lines for stdout, in the order the ids were named. */
  lines: string[];
  /** The lines for stderr: each id named that does not exist. */
  notes: string[];
  /** What --json prints: per id named, a job's {id, state}, a workflow's answer (null: absent). */
  json: unknown[];
  exitCode: number;
}

/**
 * The report of a cancel of `ids` (each once, in order): each job's state (null or absent: no
 * such job) and each workflow's outcome (null or absent: no such workflow).
 */
export function cancelReport(
  ids: readonly string[],
  jobs: ReadonlyMap<string, JobState | null>,
  workflows: ReadonlyMap<string, WorkflowActed | null>,
): CancelReport {
  const report: CancelReport = { lines: [], notes: [], json: [], exitCode: CANCEL_EXIT.done };
  for (const id of ids) {
    if (isWorkflowId(id)) {
      const acted = workflows.get(id) ?? null;
      report.json.push(acted?.value ?? null);
      if (acted) report.lines.push(...acted.lines);
      else report.notes.push(`no workflow ${id}`);
      continue;
    }
    const state = jobs.get(id) ?? null;
    report.json.push({ id, state });
    if (state === null) report.notes.push(`no job ${id}`);
    else report.lines.push(`job ${id}: ${state}${isEndedState(state) ? "" : CANCEL_PENDING_NOTE}`);
  }
  if (report.notes.length > 0) report.exitCode = CANCEL_EXIT.missing;
  return report;
}
