import { type Command, InvalidArgumentError } from "commander";
import type { Job, JobSummary, Removed, WorkflowRetry } from "../../broker/api/schemas.ts";
import type { TaskState } from "../../common/model/states.ts";
import { formatTaskList, parseTaskList, TaskListError } from "../../common/model/task-list.ts";
import { skippedSummary } from "../../common/model/task-retry.ts";
import { parseLifetime } from "../../common/model/tokens.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { ApiClient, CliError } from "../client.ts";
import { printJson } from "../format.ts";
import { describe } from "./index.ts";

/** cancel, hold, release, migrate: POST /api/v1/jobs/{id}/{action}. */
export function registerControl(program: Command): void {
  for (const action of ["hold", "release"]) {
    program
      .command(action)
      .description(describe(action))
      .argument("<id>", "job id")
      .option("--json", "print the job as JSON")
      .action(async (id: string, options: { json?: boolean }) => {
        const job = await new ApiClient().json<Job>(
          "POST",
          `/api/v1/jobs/${encodeURIComponent(id)}/${action}`,
          { json: {} },
        );
        if (options.json) printJson(job);
        else process.stdout.write(`job ${job.id}: ${job.state}\n`);
      });
  }
  program
    .command("cancel")
    .description(describe("cancel"))
    .argument("<id>", "job id")
    .option("--tasks <list>", "cancel these tasks only, e.g. 3,7-9 (the rest go on)", taskListOption)
    .option("--json", "print the job as JSON")
    .action(async (id: string, options: { tasks?: number[]; json?: boolean }) => {
      const job = await new ApiClient().json<Job>("POST", `/api/v1/jobs/${encodeURIComponent(id)}/cancel`, {
        json: options.tasks ? { tasks: options.tasks } : {},
      });
      if (options.json) printJson(job);
      else if (options.tasks)
        process.stdout.write(`job ${job.id}: ${job.state} (cancelled ${taskWord(options.tasks)})\n`);
      else process.stdout.write(`job ${job.id}: ${job.state}\n`);
    });
  program
    .command("retry")
    .description(describe("retry"))
    .argument("<id>", "job id, or a workflow's id (flow-N): its failed jobs and those cancelled for them")
    .option(
      "--tasks <list>",
      "retry these tasks, e.g. 3,7-9 (default: every failed or cancelled task)",
      taskListOption,
    )
    .option("--failed", "failed tasks only, not cancelled ones")
    .option("--json", "print the job, with the tasks retried and skipped, as JSON")
    .addHelpText(
      "after",
      "\nA task retried gets a fresh retry budget, the same inputs, and starts from its checkpoint if it has one;" +
        "\nthe attempts it had stay (logs, outputs, accounting). Tasks named that succeeded or have not ended are" +
        "\nskipped, and said so; a retry that retries nothing is refused. Jobs cancelled because this one failed" +
        "\nare not brought back: retry them too once it has succeeded.\n" +
        "\nsteward retry flow-N reruns a workflow's failed and cancelled jobs (their failed and cancelled tasks)" +
        "\nin one step: the jobs cancelled because a dependency failed wait for it again, and what succeeded" +
        "\nis kept (DAGMan's rescue). --tasks and --failed are for a job, not a workflow.\n",
    )
    .action(async (id: string, options: { tasks?: number[]; failed?: boolean; json?: boolean }) => {
      if (isWorkflowId(id)) return retryWorkflow(id, options);
      const answer = await new ApiClient().json<RetryAnswer>(
        "POST",
        `/api/v1/jobs/${encodeURIComponent(id)}/retry`,
        {
          json: {
            ...(options.tasks ? { tasks: options.tasks } : {}),
            ...(options.failed ? { failed: true } : {}),
          },
        },
      );
      if (options.json) return printJson(answer);
      process.stdout.write(`job ${answer.id}: ${answer.state} (retried ${taskWord(answer.retried)})\n`);
      if (answer.skipped.length > 0) process.stderr.write(`skipped: ${skippedSummary(answer.skipped)}\n`);
    });
  program
    .command("migrate")
    .description(describe("migrate"))
    .argument("<id>", "job id")
    .option("--to <host>", "the host to move to")
    .option("--json", "print the job as JSON")
    .addHelpText(
      "after",
      "\nThe running attempts stop with a checkpoint and their tasks start again elsewhere. Without --to, a" +
        "\nmigration is refused (exit 1) when no other host matches the job and has room for it now: it would" +
        "\nonly come back to the same host (steward hold and release restart it there). A task that migrates" +
        "\nwaits at most 30 s for the host it may go to (another one, or the one named); then any host may take" +
        "\nit, the one it left included, so a host that went away meanwhile never keeps it waiting. Exit codes:" +
        "\n0 migrating, 1 refused (nowhere else to go, nothing running, or already on the host named), 3 other errors.\n",
    )
    .action(async (id: string, options: { to?: string; json?: boolean }) => {
      const job = await new ApiClient()
        .json<Job>("POST", `/api/v1/jobs/${encodeURIComponent(id)}/migrate`, {
          json: options.to ? { to: options.to } : {},
        })
        .catch((error: unknown) => {
          // The server's refusal (409) is an answer, not a failure to ask: exit 1, as wait's "failed".
          if (error instanceof CliError && error.status === 409) throw new CliError(error.message, 1, 409);
          throw error;
        });
      if (options.json) printJson(job);
      else process.stdout.write(`job ${job.id}: ${job.state}\n`);
    });
  program
    .command("rm")
    .description(describe("rm"))
    .argument("[ids...]", "job ids")
    .option(
      "--older-than <age>",
      "instead of ids: every job (of yours, unless an admin) that ended longer ago than this (30d, 12h, 90m, 2w)",
      (value: string) => {
        const ms = parseLifetime(value);
        if (ms === null) throw new InvalidArgumentError("an age such as 30d, 12h, 90m, 45s or 2w");
        return ms;
      },
    )
    .option("--json", "print the answers as JSON")
    .action(async (ids: string[], options: { olderThan?: number; json?: boolean }) => {
      const client = new ApiClient();
      if (options.olderThan === undefined && ids.length === 0)
        throw new CliError("name the jobs to remove, or give --older-than AGE", 2);
      if (options.olderThan !== undefined && ids.length > 0)
        throw new CliError("give job ids or --older-than, not both", 2);
      let targets = ids;
      const before = options.olderThan === undefined ? null : new Date(Date.now() - options.olderThan);
      if (before) targets = await endedBefore(client, before);
      const removed: Removed[] = [];
      for (const id of targets) {
        removed.push(await client.json<Removed>("DELETE", `/api/v1/jobs/${encodeURIComponent(id)}`));
        if (!options.json && before && removed.length % 100 === 0)
          process.stderr.write(`removed ${removed.length} of ${targets.length}\n`);
      }
      if (options.json) return printJson(before ? removed : removed[0]);
      if (!before) for (const id of targets) process.stdout.write(`job ${id} removed\n`);
      else
        process.stdout.write(
          `removed ${removed.length} job${removed.length === 1 ? "" : "s"} that ended before ${before.toISOString()}\n`,
        );
    });
}

type RetryAnswer = Job & { retried: number[]; skipped: { task: number; state: TaskState }[] };

/** A --tasks value as indexes; a list that cannot be read is refused naming the part at fault. */
export function taskListOption(value: string): number[] {
  try {
    return parseTaskList(value);
  } catch (error) {
    if (error instanceof TaskListError) throw new InvalidArgumentError(error.message);
    throw error;
  }
}

function taskWord(tasks: readonly number[]): string {
  return `${tasks.length === 1 ? "task" : "tasks"} ${formatTaskList(tasks)}`;
}

/** The ids of the jobs (the caller may see) that ended before `before`, read page by page. */
async function endedBefore(client: ApiClient, before: Date): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await client.json<JobSummary[]>("GET", "/api/v1/jobs", {
      query: { all: 1, limit: 1000, after },
    });
    for (const job of page)
      if (job.endedAt !== null && Date.parse(job.endedAt) < before.getTime()) ids.push(job.id);
    if (page.length < 1000) return ids;
    after = page[page.length - 1].id;
  }
}

/** `steward retry flow-N`: the workflow's failed and cancelled jobs, in one step. */
async function retryWorkflow(id: string, options: { tasks?: number[]; failed?: boolean; json?: boolean }) {
  if (options.tasks || options.failed)
    throw new CliError("--tasks and --failed name a job's tasks: a workflow's retry takes neither", 2);
  const answer = await new ApiClient().json<WorkflowRetry>(
    "POST",
    `/api/v1/workflows/${encodeURIComponent(id)}/retry`,
    { json: {} },
  );
  if (options.json) return printJson(answer);
  const jobs = answer.retried.map((each) => `${each.name} (job ${each.job})`).join(", ");
  process.stdout.write(`workflow ${answer.workflow}: retried ${jobs}\n`);
}
