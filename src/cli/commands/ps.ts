import type { Command } from "commander";
import type { JobSummary } from "../../common/api/jobs.ts";
import type { WorkflowSummary } from "../../common/api/workflows.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { integer } from "../../common/command-line/numbers.ts";
import { ApiClient } from "../client.ts";
import { printJson, shortTime, table } from "../format.ts";

export function registerPs(program: Command): void {
  program
    .command("ps")
    .description(describe("ps"))
    .option("--all", "include ended jobs")
    .option("--state <state>", "only jobs in this state")
    .option("--user <name>", "only this owner's jobs (a user's token lists only their own anyway)")
    .option("--name <pattern>", "only jobs of this name: exact, or a glob with * and ? (quote it: 'sweep-*')")
    .option("--limit <n>", "at most this many jobs (1..1000), in id order", integer("--limit", 1))
    .option("--after <id>", "only jobs after this id (the next page: the last id of the one before)")
    .option("--workflows", "list workflows (flow-N) instead of jobs: with --all, --user and --json only")
    .option("--json", "print JSON")
    .addHelpText(
      "after",
      "\nsteward ps --workflows lists workflows, those with a job not ended unless --all, one line each:" +
        "\nID, NAME (the workflow file's, or -), OWNER, STATE (from its jobs'), JOBS (how many), SUBMITTED.\n",
    )
    .action(
      async (options: {
        all?: boolean;
        state?: string;
        user?: string;
        name?: string;
        limit?: number;
        after?: string;
        workflows?: boolean;
        json?: boolean;
      }) => {
        const client = new ApiClient();
        if (options.workflows) return listWorkflows(client, options);
        const response = await client.request("GET", "/api/v1/jobs", {
          query: {
            all: options.all ? 1 : undefined,
            state: options.state,
            user: options.user,
            name: options.name,
            limit: options.limit,
            after: options.after,
          },
        });
        const jobs = (await response.json()) as JobSummary[];
        // A page that is not the last says how to get the next one.
        const more = response.headers.get("link")?.includes('rel="next"') && jobs.length > 0;
        if (more && !options.json)
          process.stderr.write(`more jobs follow: steward ps ... --after ${jobs[jobs.length - 1].id}\n`);
        if (options.json) return printJson(jobs);
        if (jobs.length === 0) return void process.stdout.write("no jobs\n");
        const rows = jobs.map((job) => [
          job.id,
          job.name,
          job.owner,
          job.state,
          job.qos,
          job.priority,
          `${job.counts.succeeded}/${job.taskCount}`,
          job.counts.running,
          job.counts.failed,
          shortTime(job.createdAt),
        ]);
        process.stdout.write(
          `${table(["ID", "NAME", "OWNER", "STATE", "QOS", "PRIO", "DONE", "RUN", "FAIL", "SUBMITTED"], rows)}\n`,
        );
      },
    );
}

/** `ps --workflows`: the workflows the server lists, one line each. */
async function listWorkflows(
  client: ApiClient,
  options: { all?: boolean; user?: string; json?: boolean } & Record<string, unknown>,
): Promise<void> {
  const others = ["state", "name", "limit", "after"].filter((option) => options[option] !== undefined);
  if (others.length > 0)
    throw new CliError(
      `--workflows takes --all, --user and --json only, not ${others.map((option) => `--${option}`).join(", ")}`,
      2,
    );
  const workflows = await client.json<WorkflowSummary[]>("GET", "/api/v1/workflows", {
    query: { all: options.all ? 1 : undefined, user: options.user },
  });
  if (options.json) return printJson(workflows);
  if (workflows.length === 0) return void process.stdout.write("no workflows\n");
  const rows = workflows.map((workflow) => [
    workflow.workflow,
    workflow.name ?? "-",
    workflow.owner,
    workflow.state,
    Object.keys(workflow.jobs).length,
    shortTime(workflow.createdAt),
  ]);
  process.stdout.write(`${table(["ID", "NAME", "OWNER", "STATE", "JOBS", "SUBMITTED"], rows)}\n`);
}
