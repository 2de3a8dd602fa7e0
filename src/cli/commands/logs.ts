import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Command } from "commander";
import type { Workflow } from "../../common/api/workflows.ts";
import { describe } from "../../common/command-line/commands.ts";
import { integer } from "../../common/command-line/numbers.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { ApiClient } from "../client.ts";
import { LinePrefixer } from "../run-job.ts";
import { attemptSeparator, followTask } from "../task-follower.ts";

interface LogOptions {
  task: number;
  follow?: boolean;
  stderr?: boolean;
  rank: number;
}

export function registerLogs(program: Command): void {
  program
    .command("logs")
    .description(describe("logs"))
    .argument(
      "<id>",
      "job id, or a workflow's id (flow-N): each job's output, its lines prefixed by its name",
    )
    .option("--task <n>", "task index", integer("--task"), 0)
    .option(
      "-f, --follow",
      "follow the task from its latest attempt until the task ends, each next attempt from its start",
    )
    .option("--stderr", "stderr instead of stdout")
    .option("--rank <r>", "a multi-node job's rank", integer("--rank"), 0)
    .addHelpText(
      "after",
      "\nWith -f, when the task moves on to another attempt (a retry, a migration, a hold and release, a lost" +
        "\nhost) the new attempt's output follows from its first byte, after a line on stderr such as" +
        "\n  --- attempt 2 on local-1 ---\n" +
        "\nsteward logs flow-N writes the output of each job of the workflow (its task --task, when it has it)," +
        "\nin the workflow's order, each line prefixed by the job's name (`prep: ...`); with -f the jobs are" +
        "\nfollowed at once, each until its task ends, and the separator line is prefixed too.\n",
    )
    .action(async (id: string, options: LogOptions) => {
      const client = new ApiClient();
      if (isWorkflowId(id)) return workflowLogs(client, id, options);
      const stream = options.stderr ? "stderr" : "stdout";
      if (options.follow) {
        await followTask(client, id, options.task, {
          streams: [stream],
          rank: options.rank,
          from: "latest",
          onChunk: (_, chunk) => process.stdout.write(chunk),
          onAttempt: (attempt, first) => {
            if (!first) process.stderr.write(attemptSeparator(attempt));
          },
        });
        return;
      }
      const response = await client.request("GET", `/api/v1/jobs/${encodeURIComponent(id)}/logs`, {
        query: { task: options.task, stream, rank: options.rank === 0 ? undefined : options.rank },
      });
      if (!response.body) return;
      await pipeline(Readable.fromWeb(response.body), process.stdout, { end: false });
    });
}

/** Each job's log of a workflow, its lines prefixed by its name; with -f, all followed at once. */
async function workflowLogs(client: ApiClient, id: string, options: LogOptions): Promise<void> {
  const workflow = await client.json<Workflow>("GET", `/api/v1/workflows/${encodeURIComponent(id)}`);
  // Removed jobs have no log, and a job without the task asked for is passed over.
  const jobs = workflow.graph.filter((job) => job.state !== null && options.task < job.taskCount);
  const stream = options.stderr ? "stderr" : "stdout";
  const write = (text: string) => process.stdout.write(text);
  if (!options.follow) {
    for (const job of jobs) {
      const lines = new LinePrefixer(`${job.name}: `, write);
      const response = await client.request("GET", `/api/v1/jobs/${encodeURIComponent(job.job)}/logs`, {
        query: { task: options.task, stream, rank: options.rank === 0 ? undefined : options.rank },
      });
      if (response.body) for await (const chunk of response.body) lines.push(chunk);
      lines.end();
    }
    return;
  }
  await Promise.all(
    jobs.map((job) => {
      const lines = new LinePrefixer(`${job.name}: `, write);
      return followTask(client, job.job, options.task, {
        streams: [stream],
        rank: options.rank,
        from: "latest",
        onChunk: (_, chunk) => lines.push(chunk),
        onStreamEnd: () => lines.end(),
        onAttempt: (attempt, first) => {
          if (!first) process.stderr.write(`${job.name}: ${attemptSeparator(attempt)}`);
        },
      });
    }),
  );
}
