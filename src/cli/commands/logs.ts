import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Command } from "commander";
import { ApiClient } from "../client.ts";
import { integer } from "../numbers.ts";
import { attemptSeparator, followTask } from "../task-follower.ts";
import { describe } from "./index.ts";

export function registerLogs(program: Command): void {
  program
    .command("logs")
    .description(describe("logs"))
    .argument("<id>", "job id")
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
        "\n  --- attempt 2 on local-1 ---\n",
    )
    .action(
      async (id: string, options: { task: number; follow?: boolean; stderr?: boolean; rank: number }) => {
        const client = new ApiClient();
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
      },
    );
}
