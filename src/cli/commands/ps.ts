import type { Command } from "commander";
import type { JobSummary } from "../../common/api/jobs.ts";
import type { WorkflowSummary } from "../../common/api/workflows.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { integer } from "../../common/command-line/numbers.ts";
import { ApiClient } from "../client.ts";
import { printJson, shortTime, table } from "../format.ts";
import {
  DEFAULT_PS_COLUMNS,
  PS_COLUMNS,
  type PsColumn,
  parsePsColumns,
  psHeaders,
  psRows,
} from "../ps-columns.ts";

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
    .option(
      "--workflows",
      "list workflows (flow-N) instead of jobs: with --all, --user, --no-header and --json only",
    )
    .option(
      "--format <columns>",
      `these columns, in this order, comma-separated (${Object.keys(PS_COLUMNS).join(", ")})`,
      parsePsColumns,
    )
    .option("--no-header", "leave out the header line (and print nothing when no job is listed)")
    .option("--json", "print JSON")
    .addHelpText("after", HELP)
    .action(
      async (options: {
        all?: boolean;
        state?: string;
        user?: string;
        name?: string;
        limit?: number;
        after?: string;
        workflows?: boolean;
        format?: PsColumn[];
        header: boolean;
        json?: boolean;
      }) => {
        if (options.json && (options.format || !options.header))
          throw new CliError("--json prints every field: give it without --format and --no-header", 2);
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
        // The table as it always was, unless the columns or the header line are asked for.
        if (jobs.length === 0 && !options.format && options.header)
          return void process.stdout.write("no jobs\n");
        const columns = options.format ?? DEFAULT_PS_COLUMNS;
        printTable(psHeaders(columns), psRows(jobs, columns), options.header);
      },
    );
}

/** `ps --workflows`: the workflows the server lists, one line each. */
async function listWorkflows(
  client: ApiClient,
  options: { all?: boolean; user?: string; json?: boolean; header: boolean } & Record<string, unknown>,
): Promise<void> {
  const others = ["state", "name", "limit", "after", "format"].filter(
    (option) => options[option] !== undefined,
  );
  if (others.length > 0)
    throw new CliError(
      `--workflows takes --all, --user, --no-header and --json only, not ${others.map((option) => `--${option}`).join(", ")}`,
      2,
    );
  const workflows = await client.json<WorkflowSummary[]>("GET", "/api/v1/workflows", {
    query: { all: options.all ? 1 : undefined, user: options.user },
  });
  if (options.json) return printJson(workflows);
  if (workflows.length === 0 && options.header) return void process.stdout.write("no workflows\n");
  const rows = workflows.map((workflow) => [
    workflow.workflow,
    workflow.name ?? "-",
    workflow.owner,
    workflow.state,
    Object.keys(workflow.jobs).length,
    shortTime(workflow.createdAt),
  ]);
  printTable(["ID", "NAME", "OWNER", "STATE", "JOBS", "SUBMITTED"], rows, options.header);
}

/** The table on stdout; without its header and rows, nothing. */
function printTable(headers: string[], rows: (string | number)[][], header: boolean): void {
  if (!header && rows.length === 0) return;
  process.stdout.write(`${table(headers, rows, { header })}\n`);
}

const HELP = `
--format picks the columns, in the order given, each shown as in the table: steward ps --format
id,state,name prints ID, STATE and NAME. With --no-header the lines are the jobs alone, for a
script that polls (steward ps --all --format id,state --no-header | while read id state; do ...).
Columns are two spaces apart at least; only NAME may hold spaces (and SUBMITTED and ENDED are
DATE TIME): a script that splits lines on spaces puts those last.

steward ps --workflows lists workflows, those with a job not ended unless --all, one line each:
ID, NAME (the workflow file's, or -), OWNER, STATE (from its jobs'), JOBS (how many), SUBMITTED.
`;
