import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import type { Job } from "../../broker/api/schemas.ts";
import { ApiClient, CliError } from "../client.ts";
import { describe } from "./index.ts";

const ENDED = new Set(["succeeded", "failed", "cancelled"]);

/** 0 when all succeeded, 1 when any failed or was cancelled, 2 on timeout. */
export async function waitForJobs(
  client: ApiClient,
  ids: string[],
  timeoutSeconds: number | null,
  progress: boolean,
): Promise<number> {
  const deadline = timeoutSeconds === null ? Number.POSITIVE_INFINITY : Date.now() + timeoutSeconds * 1000;
  let delay = 100;
  let lastLine = "";
  for (;;) {
    const jobs = await Promise.all(
      ids.map((id) =>
        client.json<Job>("GET", `/api/v1/jobs/${encodeURIComponent(id)}`, {
          query: { tasks: 0, events: 0 },
        }),
      ),
    );
    if (progress && process.stderr.isTTY) {
      const line = jobs
        .map(
          (job) =>
            `${job.id}: ${job.state} (${job.counts.succeeded} ok, ${job.counts.running} running, ${job.counts.pending} pending, ${job.counts.failed} failed)`,
        )
        .join("; ");
      if (line !== lastLine) process.stderr.write(`\r\x1b[K${line}`);
      lastLine = line;
    }
    if (jobs.every((job) => ENDED.has(job.state))) {
      if (progress && process.stderr.isTTY) process.stderr.write("\n");
      return jobs.every((job) => job.state === "succeeded") ? 0 : 1;
    }
    if (Date.now() >= deadline) {
      if (progress && process.stderr.isTTY) process.stderr.write("\n");
      return 2;
    }
    await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
    delay = Math.min(1000, delay * 1.5);
  }
}

export function registerWait(program: Command): void {
  program
    .command("wait")
    .description(describe("wait"))
    .argument("<ids...>", "job ids")
    .option("--timeout <seconds>", "give up after this many seconds", parseFloat)
    .action(async (ids: string[], options: { timeout?: number }) => {
      if (options.timeout !== undefined && !(options.timeout >= 0))
        throw new CliError("--timeout must be a number of seconds");
      process.exitCode = await waitForJobs(new ApiClient(), ids, options.timeout ?? null, true);
    });
}
