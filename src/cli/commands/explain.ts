import type { Command } from "commander";
import type { Explanation } from "../../common/api/explanation.ts";
import type { Workflow } from "../../common/api/workflows.ts";
import { describe } from "../../common/command-line/commands.ts";
import { isEndedState } from "../../common/model/states.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { ApiClient } from "../client.ts";
import { printJson, table } from "../format.ts";

export function registerExplain(program: Command): void {
  program
    .command("explain")
    .description(describe("explain"))
    .argument("<id>", "job id, or a workflow's id (flow-N): each of its jobs in turn")
    .option("--json", "print JSON")
    .addHelpText(
      "after",
      "\nsteward explain flow-N explains each job of the workflow in the workflow's order (each after those it" +
        "\nwaits for), each headed `job 8 (train) is waiting`, a blank line between them; a removed job is one" +
        "\nline (job 8 (train) was removed). --json: [{name, job, explanation}], explanation null when removed.\n",
    )
    .action(async (id: string, options: { json?: boolean }) => {
      if (isWorkflowId(id)) return explainWorkflow(new ApiClient(), id, options.json === true);
      const answer = await new ApiClient().json<Explanation>(
        "GET",
        `/api/v1/jobs/${encodeURIComponent(id)}/explain`,
      );
      if (options.json) return printJson(answer);
      process.stdout.write(renderExplanation(answer));
    });
}

/** `explain flow-N`: each job's explanation in the workflow's order, headed by its id and name. */
async function explainWorkflow(client: ApiClient, id: string, json: boolean): Promise<void> {
  const workflow = await client.json<Workflow>("GET", `/api/v1/workflows/${encodeURIComponent(id)}`);
  const answers: { name: string; job: string; explanation: Explanation | null }[] = [];
  for (const member of workflow.graph) {
    const explanation =
      member.state === null
        ? null
        : await client.json<Explanation>("GET", `/api/v1/jobs/${encodeURIComponent(member.job)}/explain`);
    answers.push({ name: member.name, job: member.job, explanation });
  }
  if (json) return printJson(answers);
  const parts = answers.map(({ name, job, explanation }) =>
    explanation === null
      ? `job ${job} (${name}) was removed\n`
      : renderExplanation(explanation, `job ${job} (${name}) is ${explanation.state}`),
  );
  process.stdout.write(parts.join("\n"));
}

/** What explain prints; `headline` replaces `job ID is STATE` (a dry run's job has no id). */
export function renderExplanation(
  answer: Explanation,
  headline = `job ${answer.id} is ${answer.state}`,
): string {
  const reasons = answer.reasons.map((reason) => `  ${reason}`);
  // An ended job: how it ended, and no hosts (they no longer apply).
  if (isEndedState(answer.state)) return `${[headline, ...reasons].join("\n")}\n`;
  const lines = [headline, ...reasons, `  ${answer.nextPass.line}`];
  if (answer.hosts.length === 0) {
    lines.push(
      answer.pools.length > 0
        ? "no hosts are known yet: the pools below start pilots for work that finds no room"
        : "no hosts are known: start an agent",
    );
  } else {
    lines.push(summaryLine(answer.summary));
    if (answer.clauses.length > 0) {
      lines.push(
        `requirements clause by clause (on how many of the ${answer.hosts.length} hosts each holds):`,
      );
      const rows = answer.clauses.map((clause) => [String(clause.matching), clause.clause]);
      lines.push(
        ...table(["HOSTS", "CLAUSE"], rows)
          .split("\n")
          .map((line) => `  ${line}`),
      );
    }
    lines.push(
      table(
        ["HOST", "ELIGIBLE", "REASON"],
        answer.hosts.map((h) => [h.host, h.eligible ? "yes" : "no", h.reason]),
      ),
    );
  }
  // Absent from a server of an earlier version.
  if (answer.data) lines.push(answer.data.line);
  if (answer.pools.length > 0) {
    lines.push("pools:", ...answer.pools.map((pool) => `  ${pool.line}`));
  }
  if (answer.running.length > 0) {
    lines.push("running:", ...answer.running.map((task) => `  ${task.line}`));
  }
  return `${lines.join("\n")}\n`;
}

/** `2 hosts match the requirements, 1 of them has room`. */
function summaryLine({ matching, withRoom }: Explanation["summary"]): string {
  const hosts = matching === 1 ? "1 host matches" : `${matching} hosts match`;
  return `${hosts} the requirements, ${withRoom} of them ${withRoom === 1 ? "has" : "have"} room`;
}
