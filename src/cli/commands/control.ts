import { setTimeout as sleep } from "node:timers/promises";
import { type Command, InvalidArgumentError } from "commander";
import type { Job, JobSummary, Removed } from "../../common/api/jobs.ts";
import type { WorkflowJobs, WorkflowRetry } from "../../common/api/workflows.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import type { TaskState } from "../../common/model/states.ts";
import { formatTaskList, parseTaskList, TaskListError } from "../../common/model/task-list.ts";
import { skippedSummary } from "../../common/model/task-retry.ts";
import { parseLifetime } from "../../common/model/tokens.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { type CancelOptions, cancelMany } from "../cancel-many.ts";
import { CANCEL_EXIT, CANCEL_PENDING_NOTE } from "../cancel-report.ts";
import { ApiClient } from "../client.ts";
import { printJson } from "../format.ts";
import { SETTLE_MS, workflowActedOn } from "../workflow-action.ts";

/**
 * cancel, hold, release, migrate: POST /api/v1/jobs/{id}/{action}; a workflow's id:
 * /api/v1/workflows/{id}/{action}; several ids to cancel: cancel-many.ts.
 */
export function registerControl(program: Command): void {
  program
    .command("hold")
    .description(describe("hold"))
    .argument("<id>", "job id, or a workflow's id (flow-N): every job of it that has not ended")
    .option("--reason <text>", "why: kept in the job's events (steward show lists it)")
    .option("--json", "print the job (or the workflow's jobs held) as JSON")
    .addHelpText("after", SETTLE_HELP)
    .action(async (id: string, options: { reason?: string; json?: boolean }) => {
      const body: Record<string, string> = options.reason ? { reason: options.reason } : {};
      if (isWorkflowId(id)) return controlWorkflow(id, "hold", body, options);
      const client = new ApiClient();
      await client.json<Job>("POST", `/api/v1/jobs/${encodeURIComponent(id)}/hold`, { json: body });
      // Its running attempts are being stopped: the state once they have (or as it is then).
      const job = await settled(client, id, (state) => state === "held" || ENDED.has(state));
      if (options.json) return printJson(job);
      process.stdout.write(
        `${stateLine(job)}${job.state === "held" || ENDED.has(job.state) ? "" : " (held: its running attempts are being stopped)"}\n`,
      );
    });
  program
    .command("release")
    .description(describe("release"))
    .argument("<id>", "job id, or a workflow's id (flow-N): every held job of it")
    .option("--json", "print the job (or the workflow's jobs released) as JSON")
    .addHelpText(
      "after",
      "\nPrints the job's state after (job 3: pending). A job that is not held is an error, exit 1:" +
        "\n  steward: job 3: not held (succeeded)\nflow-N releases every held job of the workflow (none held: exit 1).\n",
    )
    .action(async (id: string, options: { json?: boolean }) => {
      if (isWorkflowId(id)) return controlWorkflow(id, "release", {}, options);
      const client = new ApiClient();
      const before = await client.json<Job>("GET", `/api/v1/jobs/${encodeURIComponent(id)}`, {
        query: { tasks: 0 },
      });
      if (!isHeld(before)) throw new CliError(`job ${before.id}: not held (${before.state})`, 1);
      const job = await client.json<Job>("POST", `/api/v1/jobs/${encodeURIComponent(id)}/release`, {
        json: {},
      });
      if (options.json) printJson(job);
      else process.stdout.write(`${stateLine(job)}\n`);
    });
  program
    .command("cancel")
    .description(describe("cancel"))
    .argument("<ids...>", "job ids, or workflows' ids (flow-N): every job of it that has not ended")
    .option(
      "--tasks <list>",
      "cancel these tasks only, e.g. 3,7-9 (the rest go on); with one job id",
      taskListOption,
    )
    .option(
      "--quiet",
      "print nothing (errors still go to stderr) and return once the cancels are durable, without waiting for running attempts to stop",
    )
    .option("--json", "print the job (or the workflow's jobs cancelled) as JSON")
    .addHelpText("after", SETTLE_HELP + CANCEL_HELP)
    .action(async (ids: string[], options: CancelOptions) => {
      if (options.quiet && options.json) throw new CliError("give --quiet or --json, not both", 2);
      const named = [...new Set(ids)];
      // A job or a workflow that does not exist: exit 1, as for one of several (cancel-many.ts).
      const missingIsOne = (error: unknown) => {
        if (error instanceof CliError && error.status === 404)
          throw new CliError(error.message, CANCEL_EXIT.missing, 404);
        throw error;
      };
      if (named.length > 1) {
        if (options.tasks) throw new CliError("--tasks names one job's tasks: give it with one job id", 2);
        return cancelMany(named, options);
      }
      const [id] = named;
      if (isWorkflowId(id)) {
        if (options.tasks)
          throw new CliError("--tasks names a job's tasks: a workflow's cancel takes none", 2);
        return controlWorkflow(id, "cancel", {}, options).catch(missingIsOne);
      }
      const client = new ApiClient();
      const answer = await client
        .json<Job>("POST", `/api/v1/jobs/${encodeURIComponent(id)}/cancel`, {
          json: options.tasks ? { tasks: options.tasks } : {},
        })
        .catch(missingIsOne);
      if (options.quiet) return;
      if (options.tasks) {
        if (options.json) printJson(answer);
        else process.stdout.write(`${stateLine(answer)} (cancelled ${taskWord(options.tasks)})\n`);
        return;
      }
      // Its running attempts are being stopped: the state once they have (or as it is then).
      const job = await settled(client, id, (state) => ENDED.has(state));
      if (options.json) return printJson(job);
      process.stdout.write(`${stateLine(job)}${ENDED.has(job.state) ? "" : CANCEL_PENDING_NOTE}\n`);
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
      if (isWorkflowId(id))
        throw new CliError(
          `migrate moves one job: ${id} is a workflow (steward show ${id} lists its jobs)`,
          2,
        );
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
    .argument("[ids...]", "job ids, or workflows' ids (flow-N): every job of the workflow")
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
    .addHelpText(
      "after",
      "\nA job made in a workflow goes with its workflow: steward rm flow-N removes all its jobs at once" +
        "\n(refused, nothing removed, while one has not ended: cancel flow-N first), and rm of one of its" +
        "\njobs by id is refused naming the workflow. --older-than removes each job that ended before." +
        "\n",
    )
    .action(async (ids: string[], options: { olderThan?: number; json?: boolean }) => {
      const client = new ApiClient();
      if (options.olderThan === undefined && ids.length === 0)
        throw new CliError("name the jobs to remove, or give --older-than AGE", 2);
      if (options.olderThan !== undefined && ids.length > 0)
        throw new CliError("give job ids or --older-than, not both", 2);
      let targets = ids;
      const before = options.olderThan === undefined ? null : new Date(Date.now() - options.olderThan);
      if (before) targets = await endedBefore(client, before);
      else {
        // A job of a workflow goes with its workflow only: refused before anything is removed.
        for (const id of ids.filter((each) => !isWorkflowId(each))) {
          const job = await client.json<Job>("GET", `/api/v1/jobs/${encodeURIComponent(id)}`, {
            query: { tasks: 0, events: 0 },
          });
          if (job.workflow)
            throw new CliError(
              `job ${job.id} is ${job.workflow.name} of workflow ${job.workflow.id}: remove the whole workflow with steward rm ${job.workflow.id}`,
            );
        }
        const answers: (Removed | WorkflowJobs)[] = [];
        for (const id of ids) {
          if (isWorkflowId(id)) {
            const answer = await client.json<WorkflowJobs>(
              "DELETE",
              `/api/v1/workflows/${encodeURIComponent(id)}`,
            );
            answers.push(answer);
            if (!options.json) {
              const jobs = answer.jobs.map((job) => `${job.name} (job ${job.job})`).join(", ");
              process.stdout.write(`workflow ${answer.workflow} removed${jobs ? `: ${jobs}` : ""}\n`);
            }
            continue;
          }
          answers.push(await client.json<Removed>("DELETE", `/api/v1/jobs/${encodeURIComponent(id)}`));
          if (!options.json) process.stdout.write(`job ${id} removed\n`);
        }
        if (options.json) printJson(answers.length === 1 ? answers[0] : answers);
        return;
      }
      const removed: Removed[] = [];
      for (const id of targets) {
        removed.push(await client.json<Removed>("DELETE", `/api/v1/jobs/${encodeURIComponent(id)}`));
        if (!options.json && removed.length % 100 === 0)
          process.stderr.write(`removed ${removed.length} of ${targets.length}\n`);
      }
      if (options.json) return printJson(removed);
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

const ENDED = new Set(["succeeded", "failed", "cancelled"]);

const CANCEL_HELP =
  "\nSeveral ids (steward cancel 12 13 flow-4): the jobs are cancelled in one request (dependants first)," +
  "\neach workflow in one of its own; then one line per id as above, in the order given. A job that has" +
  "\nended already is left as it is and shown with its state. --quiet prints nothing and returns once" +
  "\nthe cancels are durable, without waiting for running attempts to stop (a workflow engine's cancel" +
  "\ncommand: Snakemake's --cluster-cancel gives it 2 s). --tasks is for one job." +
  "\n\nExit codes:" +
  `\n  ${CANCEL_EXIT.done}  every job named is cancelled, or had ended` +
  `\n  ${CANCEL_EXIT.missing}  a job or workflow named does not exist (or is another user's): named on stderr` +
  "\n     (steward: no job 9); the others are cancelled all the same" +
  "\n  2  a wrong command line (--tasks with several ids, --quiet with --json)" +
  "\n  3  the server could not be asked (unreachable, token refused, a reader's token)\n";

const SETTLE_HELP =
  "\nPrints the job's state once its running attempts have stopped (job 3: held, job 3: cancelled)," +
  "\nwaiting up to 10 s for them; after that its state then, with a note. flow-N acts on every job of" +
  "\nthe workflow that has not ended in one step (cancel: dependants first), then prints the workflow's" +
  "\nstate and one line per job acted on: job 5 (prep): cancelled.\n";

function stateLine(job: Pick<Job, "id" | "state">): string {
  return `job ${job.id}: ${job.state}`;
}

/**
 * Whether a job is held: its state says so, or (its running attempts still stopping) its latest
 * hold or release event is a hold.
 */
function isHeld(job: Job): boolean {
  if (job.state === "held") return true;
  if (ENDED.has(job.state)) return false;
  const last = (job.events ?? []).filter((event) => event.kind === "hold" || event.kind === "release").at(-1);
  return last?.kind === "hold";
}

/** The job once `done(state)` holds, or as it is after SETTLE_MS. */
async function settled(client: ApiClient, id: string, done: (state: string) => boolean): Promise<Job> {
  const deadline = Date.now() + SETTLE_MS;
  let delay = 50;
  for (;;) {
    const job = await client.json<Job>("GET", `/api/v1/jobs/${encodeURIComponent(id)}`, {
      query: { tasks: 0, events: 0 },
    });
    if (done(job.state) || Date.now() >= deadline) return job;
    await sleep(delay);
    delay = Math.min(500, delay * 2);
  }
}

/**
 * `cancel|hold|release flow-N`: every job of the workflow at once (one request, one commit); each
 * job acted on is then shown with its state once its running attempts have stopped (or after
 * SETTLE_MS). A release with no held job is an error, as a job's. `quiet`: nothing shown, and no
 * waiting for the attempts.
 */
async function controlWorkflow(
  id: string,
  action: "cancel" | "hold" | "release",
  body: Record<string, string>,
  { json, quiet }: { json?: boolean; quiet?: boolean },
): Promise<void> {
  const acted = await workflowActedOn(new ApiClient(), id, action, body, !quiet);
  if (quiet) return;
  if (json) return printJson(acted.value);
  process.stdout.write(`${acted.lines.join("\n")}\n`);
}
