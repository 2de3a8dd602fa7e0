// `steward cancel ID ID...`: the jobs named cancelled in one request (POST /api/v1/jobs/cancel),
// each workflow named (flow-N) in one request of its own; then, unless --quiet, each one's state
// once its running attempts have stopped (up to SETTLE_MS), asked for all jobs at once.

import { setTimeout as sleep } from "node:timers/promises";
import { CliError } from "../common/command-line/cli-error.ts";
import { isEndedState } from "../common/model/states.ts";
import { isWorkflowId } from "../common/model/workflow-id.ts";
import { cancelReport } from "./cancel-report.ts";
import { ApiClient } from "./client.ts";
import { printJson } from "./format.ts";
import { cancelJobs, jobStates, type StatesById } from "./many-jobs.ts";
import { SETTLE_MS, type WorkflowActed, workflowActedOn } from "./workflow-action.ts";

export interface CancelOptions {
  tasks?: number[];
  quiet?: boolean;
  json?: boolean;
}

/** Cancels the jobs and workflows of `ids` (each named once), prints what became of each, sets the exit code. */
export async function cancelMany(ids: readonly string[], { quiet, json }: CancelOptions): Promise<void> {
  const client = new ApiClient();
  const cancelled = await cancelJobs(
    client,
    ids.filter((id) => !isWorkflowId(id)),
  );
  const workflows = new Map<string, WorkflowActed | null>();
  for (const id of ids.filter(isWorkflowId))
    workflows.set(
      id,
      await workflowActedOn(client, id, "cancel", {}, !quiet).catch((error: unknown) => {
        if (error instanceof CliError && error.status === 404) return null;
        throw error;
      }),
    );
  const jobs = quiet ? cancelled : await settledStates(client, cancelled);
  const report = cancelReport(ids, jobs, workflows);
  for (const note of report.notes) process.stderr.write(`steward: ${note}\n`);
  if (json) printJson(report.json);
  else if (!quiet && report.lines.length > 0) process.stdout.write(`${report.lines.join("\n")}\n`);
  process.exitCode = report.exitCode;
}

/** The states once every job that has not ended has (or as they are after SETTLE_MS), all asked at once. */
async function settledStates(client: ApiClient, states: StatesById): Promise<StatesById> {
  const deadline = Date.now() + SETTLE_MS;
  const now: StatesById = new Map(states);
  let delay = 50;
  for (;;) {
    const open = [...now].filter(([, state]) => state !== null && !isEndedState(state)).map(([id]) => id);
    if (open.length === 0 || Date.now() >= deadline) return now;
    await sleep(delay);
    delay = Math.min(500, delay * 2);
    for (const [id, state] of await jobStates(client, open)) now.set(id, state);
  }
}
