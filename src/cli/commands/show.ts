import type { Command } from "commander";
import type { Job, Workflow } from "../../broker/api/schemas.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { ApiClient } from "../client.ts";
import { printJson, shortTime, table } from "../format.ts";
import { usageLine } from "../usage-format.ts";
import { renderWorkflow } from "../workflow-graph.ts";
import { describe } from "./index.ts";

export function registerShow(program: Command): void {
  program
    .command("show")
    .description(describe("show"))
    .argument("<id>", "job id, or a workflow's id (flow-N): its jobs as a graph with their states")
    .option("--json", "print JSON")
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
      const rows: (string | number)[][] = [];
      for (const task of tasks) {
        if (task.attempts.length === 0) rows.push([task.index, task.state, "-", "-", "-", "-", "-", "-"]);
        for (const attempt of task.attempts) {
          rows.push([
            task.index,
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
      lines.push(table(["TASK", "STATE", "ATTEMPT", "HOST", "OUTCOME", "EXIT", "STARTED", "REASON"], shown));
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
      for (const event of events)
        lines.push(`  ${shortTime(event.at)}  ${event.kind.padEnd(16)} ${event.message}`);
      process.stdout.write(`${lines.join("\n")}\n`);
    });
}
