import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import type { Job, Task } from "../../common/api/jobs.ts";
import type { Workflow } from "../../common/api/workflows.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { ApiClient } from "../client.ts";
import { type FailedTask, outcomeLine } from "../job-outcome.ts";

const ENDED = new Set(["succeeded", "failed", "cancelled"]);

/**
 * 0 when all succeeded, 1 when any failed or was cancelled, 2 on timeout. `progress`: a line of
 * progress on a terminal's stderr while waiting; `report`: then one line per job on stderr
 * (outcomeLine).
 */
export async function waitForJobs(
  client: ApiClient,
  ids: string[],
  timeoutSeconds: number | null,
  { progress, report }: { progress: boolean; report: boolean },
): Promise<number> {
  const deadline = timeoutSeconds === null ? Number.POSITIVE_INFINITY : Date.now() + timeoutSeconds * 1000;
  let delay = 100;
  let lastLine = "";
  for (;;) {
    const jobs = await Promise.all(
      ids.map((id) =>
        client.json<Job>("GET", `/api/v1/jobs/${encodeURIComponent(id)}`, {
          query: { tasks: 0, events: 0 },
        }),
      ),
    );
    if (progress && process.stderr.isTTY) {
      const line = jobs
        .map(
          (job) =>
            `${job.id}: ${job.state} (${job.counts.succeeded} ok, ${job.counts.running} running, ${job.counts.pending} pending, ${job.counts.failed} failed)`,
        )
        .join("; ");
      if (line !== lastLine) process.stderr.write(`\r\x1b[K${line}`);
      lastLine = line;
    }
    const ended = jobs.every((job) => ENDED.has(job.state));
    if (ended || Date.now() >= deadline) {
      if (progress && process.stderr.isTTY) process.stderr.write("\r\x1b[K");
      if (report) await reportOutcomes(client, jobs);
      if (!ended) return 2;
      return jobs.every((job) => job.state === "succeeded") ? 0 : 1;
    }
    await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
    delay = Math.min(1000, delay * 1.5);
  }
}

/** One line per job on stderr: its state, and what its first failed task did. */
async function reportOutcomes(client: ApiClient, jobs: readonly Job[]): Promise<void> {
  for (const job of jobs) {
    const failed = job.state === "failed" ? await firstFailedTask(client, job) : null;
    process.stderr.write(`${outcomeLine({ ...job, workflowName: job.workflow?.name }, failed)}\n`);
  }
}

/** The job's lowest-index failed task with its attempts (null when none is `failed`). */
async function firstFailedTask(client: ApiClient, job: Job): Promise<FailedTask | null> {
  const path = `/api/v1/jobs/${encodeURIComponent(job.id)}`;
  let index = 0;
  if (job.taskCount > 1) {
    const { states, legend } = await client.json<{ states: string; legend: Record<string, string> }>(
      "GET",
      `${path}/task-states`,
    );
    index = states.indexOf(legend.failed);
    if (index < 0) return null;
  }
  const task = await client.json<Task>("GET", `${path}/tasks/${index}`);
  return task.state === "failed" ? task : null;
}

/** Job ids and workflow ids (flow-N) as job ids: a workflow's own jobs, in its order (removed ones left out). */
export async function expandWorkflowIds(client: ApiClient, ids: readonly string[]): Promise<string[]> {
  const expanded: string[] = [];
  for (const id of ids) {
    if (!isWorkflowId(id)) {
      expanded.push(id);
      continue;
    }
    const workflow = await client.json<Workflow>("GET", `/api/v1/workflows/${encodeURIComponent(id)}`);
    for (const job of workflow.graph) if (job.state !== null) expanded.push(job.job);
  }
  return [...new Set(expanded)];
}

export function registerWait(program: Command): void {
  program
    .command("wait")
    .description(describe("wait"))
    .argument("<ids...>", "job ids, or workflows' ids (flow-N): all their jobs")
    .option("--timeout <seconds>", "give up after this many seconds", parseFloat)
    .addHelpText(
      "after",
      "\nOnce all have ended (or at the timeout), one line per job on stderr:" +
        "\n  job 3: succeeded\n  job 4: failed (task 2 exited 1)\n  job 5 (prep): cancelled      (a workflow's job, by its name there)" +
        "\n  job 6: running (not ended)   (at the timeout)\n",
    )
    .action(async (ids: string[], options: { timeout?: number }) => {
      if (options.timeout !== undefined && !(options.timeout >= 0))
        throw new CliError("--timeout must be a number of seconds");
      const client = new ApiClient();
      const jobs = await expandWorkflowIds(client, ids);
      process.exitCode = await waitForJobs(client, jobs, options.timeout ?? null, {
        progress: true,
        report: true,
      });
    });
}
