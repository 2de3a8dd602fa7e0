import type { Command } from "commander";
import type { Job } from "../../common/api/jobs.ts";
import type { Workflow } from "../../common/api/workflows.ts";
import { describe } from "../../common/command-line/commands.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { ApiClient } from "../client.ts";
import { printJson, shortTime, table } from "../format.ts";
import { usageLine } from "../usage-format.ts";
import { renderWorkflow } from "../workflow-graph.ts";

export function registerShow(program: Command): void {
  program
    .command("show")
    .description(describe("show"))
    .argument("<id>", "job id, or a workflow's id (flow-N): its jobs as a graph with their states")
    .option("--json", "print JSON")
    .addHelpText(
      "after",
      "\nThe task table lists each attempt; an array with parameters has a PARAM column after TASK (the task's" +
        "\nparameter: a string as it is, a mapping as key=value pairs, cut at 40 characters). The events follow," +
        "\noldest first, each with its kind and message.\n",
    )
    .action(async (id: string, options: { json?: boolean }) => {
      if (isWorkflowId(id)) {
        const workflow = await new ApiClient().json<Workflow>(
          "GET",
          `/api/v1/workflows/${encodeURIComponent(id)}`,
        );
        if (options.json) return printJson(workflow);
        process.stdout.write(renderWorkflow(workflow));
        return;
      }
      const job = await new ApiClient().json<Job>("GET", `/api/v1/jobs/${encodeURIComponent(id)}`);
      if (options.json) return printJson(job);
      // Asked for with its tasks and events (the default), so both are there.
      const tasks = job.tasks ?? [];
      const events = job.events ?? [];
      const c = job.counts;
      const lines = [
        `job ${job.id}  ${job.name}  owner ${job.owner}  qos ${job.qos}  priority ${job.priority}`,
        `state ${job.state}  submitted ${shortTime(job.createdAt)}` +
          (job.workflow ? `  workflow ${job.workflow.id} (as ${job.workflow.name})` : ""),
        `tasks ${tasks.length}: ${c.succeeded} succeeded, ${c.running} running, ${c.pending} pending, ${c.failed} failed, ${c.cancelled} cancelled`,
        "",
      ];
      const checkpoints = tasks.filter((task) => task.checkpoint);
      if (checkpoints.length === 1 && tasks.length === 1) {
        const { generation, bytes } = checkpoints[0].checkpoint!;
        lines.splice(3, 0, `checkpoint generation ${generation}, ${bytes} bytes`);
      } else if (checkpoints.length > 0) {
        lines.splice(3, 0, `${checkpoints.length} tasks have a checkpoint`);
      }
      // An array with parameters shows each task's, after its index.
      const params = job.spec.array?.params;
      const param = (index: number): (string | number)[] => (params ? [paramText(params[index])] : []);
      const rows: (string | number)[][] = [];
      for (const task of tasks) {
        if (task.attempts.length === 0)
          rows.push([task.index, ...param(task.index), task.state, "-", "-", "-", "-", "-", "-"]);
        for (const attempt of task.attempts) {
          rows.push([
            task.index,
            ...param(task.index),
            task.state,
            attempt.number,
            // A multi-node attempt lists its ranks' hosts, rank 0 first.
            attempt.placement.length > 1
              ? attempt.placement.map((rank) => rank.host).join(",")
              : attempt.host,
            attempt.outcome ??
              (attempt.state === "running" && task.progress
                ? `running ${Math.round(task.progress.fraction * 100)}%`
                : attempt.state),
            attempt.exitCode ?? "-",
            shortTime(attempt.startedAt),
            attempt.reason ?? "",
          ]);
        }
      }
      const shown = rows.length > 200 ? rows.slice(0, 200) : rows;
      const headers = ["TASK", ...(params ? ["PARAM"] : []), "STATE", "ATTEMPT", "HOST", "OUTCOME", "EXIT"];
      lines.push(table([...headers, "STARTED", "REASON"], shown));
      if (rows.length > shown.length) lines.push(`... ${rows.length - shown.length} more rows (use --json)`);
      // What each ended attempt used: one line an attempt, as many as the table shows.
      const ended = tasks
        .flatMap((task) => task.attempts.map((attempt) => ({ task: task.index, attempt })))
        .filter(({ attempt }) => attempt.state === "ended")
        .slice(0, shown.length);
      if (ended.length > 0) {
        lines.push("", "usage:");
        for (const { task, attempt } of ended)
          lines.push(
            `  task ${task} attempt ${attempt.number}: ${usageLine(attempt.usage, attempt.exitCode)}`,
          );
      }
      lines.push("", "events:");
      const kindWidth = Math.max(0, ...events.map((event) => event.kind.length));
      for (const event of events)
        lines.push(`  ${shortTime(event.at)}  ${event.kind.padEnd(kindWidth)}  ${event.message}`);
      process.stdout.write(`${lines.join("\n")}\n`);
    });
}

/** The longest parameter shown in `show`'s task table; a longer one is cut with `...`. */
const PARAM_WIDTH = 40;

/** A task's parameter as `show` prints it: a string as it is, a mapping as `k=v k=v`, cut to PARAM_WIDTH. */
export function paramText(param: string | Record<string, string | number | boolean> | undefined): string {
  if (param === undefined) return "-";
  const text =
    typeof param === "string"
      ? param
      : Object.entries(param)
          .map(([key, value]) => `${key}=${value}`)
          .join(" ");
  return text.length > PARAM_WIDTH ? `${text.slice(0, PARAM_WIDTH - 3)}...` : text;
}
