// steward status ID...: each job's state as a word, every job in one request, for workflow engines
// and scripts that poll (Snakemake's --cluster-status with --format snakemake).

import { type Command, Option } from "commander";
import type { Workflow } from "../../common/api/workflows.ts";
import { describe } from "../../common/command-line/commands.ts";
import type { JobState } from "../../common/model/states.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { ApiClient, CLI_RETRY_BUDGET_MS } from "../client.ts";
import { jobStates } from "../many-jobs.ts";
import { STATUS_EXIT, STATUS_FORMATS, type StatusFormat, statusReport } from "../status-format.ts";

const HELP = `
One line per id, in the order given: ID STATE, the state as the API names it (held, waiting,
pending, running, succeeded, failed, cancelled); a workflow's id (flow-N): the workflow's state,
from its jobs'. The jobs' states come in one request (up to 1000 ids a request; a workflow's, one
request each), and everything is asked before anything is printed.

Exit codes:
  ${STATUS_EXIT.found}  every job named exists
  ${STATUS_EXIT.missing}  a job named does not exist (never made, removed, or another user's): named on
     stderr (steward: no job 9), the others printed all the same
  ${STATUS_EXIT.unanswered}  nothing could be asked: the server unreachable (after ${CLI_RETRY_BUDGET_MS / 1000} s of retries), the
     token refused, a wrong command line; nothing is printed on stdout

--format snakemake answers as Snakemake's --cluster-status expects: success (succeeded), failed
(failed, cancelled, or no such job) or running (held, waiting, pending, running), the word alone
for one id, ID WORD for several. A job that does not exist is failed with exit ${STATUS_EXIT.found} there (and a
note on stderr): Snakemake stops the whole workflow when a status command exits non-zero, and such
a job can never succeed. Exit ${STATUS_EXIT.unanswered} keeps its meaning, so a server that cannot be reached
stops Snakemake rather than passing for a state.

Examples:
  steward status 12 13 14
  steward status --format snakemake 12
  snakemake --cluster 'steward run --detach --cpus {threads} -- sh' \\
            --cluster-status 'steward status --format snakemake'`;

export function registerStatus(program: Command): void {
  program
    .command("status")
    .description(describe("status"))
    .argument("<ids...>", "job ids, or workflows' ids (flow-N): the workflow's state")
    .addOption(
      new Option(
        "--format <format>",
        "state: ID STATE lines; snakemake: success, failed or running (Snakemake's --cluster-status)",
      )
        .choices(STATUS_FORMATS)
        .default("state"),
    )
    .addHelpText("after", HELP)
    .action(async (ids: string[], options: { format: StatusFormat }) => {
      const client = new ApiClient();
      const named = [...new Set(ids)];
      const states = await jobStates(
        client,
        named.filter((id) => !isWorkflowId(id)),
      );
      for (const id of named.filter(isWorkflowId)) states.set(id, await workflowState(client, id));
      const report = statusReport(named, states, options.format);
      for (const note of report.notes) process.stderr.write(`steward: ${note}\n`);
      if (report.lines.length > 0) process.stdout.write(`${report.lines.join("\n")}\n`);
      process.exitCode = report.exitCode;
    });
}

/** A workflow's state, from its jobs'; null when there is no such workflow. */
async function workflowState(client: ApiClient, id: string): Promise<JobState | null> {
  const response = await client.request("GET", `/api/v1/workflows/${encodeURIComponent(id)}`, {
    accept: [404],
  });
  if (response.status === 404) {
    await response.body?.cancel();
    return null;
  }
  return ((await response.json()) as Workflow).state;
}
