// A workflow's jobs acted on at once (`steward cancel|hold|release flow-N`): the request, then the
// wait for each job acted on to reach the state the action leads to, and what is shown of it.

import { setTimeout as sleep } from "node:timers/promises";
import type { Workflow, WorkflowJobs } from "../common/api/workflows.ts";
import { CliError } from "../common/command-line/cli-error.ts";
import { isEndedState, type JobState } from "../common/model/states.ts";
import type { ApiClient } from "./client.ts";

/** How long hold and cancel wait for a job's running attempts to stop before answering its state as it is. */
export const SETTLE_MS = 10_000;

/** What a workflow's action did: the JSON `--json` prints, and the lines printed without it. */
export interface WorkflowActed {
  value: WorkflowJobs;
  lines: string[];
}

/**
 * Asks for `action` on the workflow's jobs, then (with `settle`) waits up to SETTLE_MS for each
 * job acted on to reach the state the action leads to; the workflow's state and each job's then.
 */
export async function workflowActedOn(
  client: ApiClient,
  id: string,
  action: "cancel" | "hold" | "release",
  body: Record<string, string>,
  settle: boolean,
): Promise<WorkflowActed> {
  const path = `/api/v1/workflows/${encodeURIComponent(id)}`;
  const answer = await client.json<WorkflowJobs>("POST", `${path}/${action}`, { json: body });
  if (action === "release" && answer.jobs.length === 0)
    throw new CliError(`workflow ${answer.workflow}: no job held (${answer.state})`, 1);
  if (!settle) return { value: answer, lines: [] };
  const reached = (state: JobState | null) =>
    state === null || isEndedState(state) || (action === "hold" && state === "held") || action === "release";
  const deadline = Date.now() + SETTLE_MS;
  let workflow = await client.json<Workflow>("GET", path);
  const acted = new Set(answer.jobs.map((job) => job.job));
  const states = () => new Map(workflow.graph.map((job) => [job.job, job.state]));
  while (![...acted].every((job) => reached(states().get(job) ?? null)) && Date.now() < deadline) {
    await sleep(200);
    workflow = await client.json<Workflow>("GET", path);
  }
  const now = states();
  const jobs = answer.jobs.map((job) => ({ ...job, state: now.get(job.job) ?? job.state }));
  const verb = { cancel: "cancel", hold: "hold", release: "release" }[action];
  return {
    value: { ...answer, state: workflow.state, jobs },
    lines: [
      `workflow ${answer.workflow}: ${workflow.state}${jobs.length === 0 ? ` (no job to ${verb})` : ""}`,
      ...jobs.map((job) => `job ${job.job} (${job.name}): ${job.state}`),
    ],
  };
}
