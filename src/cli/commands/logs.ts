import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Command } from "commander";
import { ApiClient } from "../client.ts";
import { describe } from "./index.ts";

export function registerLogs(program: Command): void {
  program
    .command("logs")
    .description(describe("logs"))
    .argument("<id>", "job id")
    .option("--task <n>", "task index", "0")
    .option("-f, --follow", "follow the running attempt until it ends")
    .option("--stderr", "stderr instead of stdout")
    .option("--rank <r>", "a multi-node job's rank", "0")
    .action(
      async (id: string, options: { task: string; follow?: boolean; stderr?: boolean; rank: string }) => {
        const response = await new ApiClient().request("GET", `/api/v1/jobs/${encodeURIComponent(id)}/logs`, {
          query: {
            task: options.task,
            stream: options.stderr ? "stderr" : "stdout",
            follow: options.follow ? 1 : undefined,
            rank: options.rank === "0" ? undefined : options.rank,
          },
        });
        if (!response.body) return;
        await pipeline(Readable.fromWeb(response.body), process.stdout, { end: false });
      },
    );
}
