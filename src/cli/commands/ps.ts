import type { Command } from "commander";
import type { JobSummary } from "../../api/schemas.ts";
import { ApiClient } from "../client.ts";
import { printJson, shortTime, table } from "../format.ts";
import { describe } from "./index.ts";

export function registerPs(program: Command): void {
  program
    .command("ps")
    .description(describe("ps"))
    .option("--all", "include ended jobs")
    .option("--state <state>", "only jobs in this state")
    .option("--user <name>", "only this owner's jobs (a user's token lists only their own anyway)")
    .option("--json", "print JSON")
    .action(async (options: { all?: boolean; state?: string; user?: string; json?: boolean }) => {
      const jobs = await new ApiClient().json<JobSummary[]>("GET", "/api/v1/jobs", {
        query: { all: options.all ? 1 : undefined, state: options.state, user: options.user },
      });
      if (options.json) return printJson(jobs);
      if (jobs.length === 0) return void process.stdout.write("no jobs\n");
      const rows = jobs.map((job) => [
        job.id,
        job.name,
        job.owner,
        job.state,
        job.priority,
        `${job.counts.succeeded}/${job.taskCount}`,
        job.counts.running,
        job.counts.failed,
        shortTime(job.createdAt),
      ]);
      process.stdout.write(
        `${table(["ID", "NAME", "OWNER", "STATE", "PRIO", "DONE", "RUN", "FAIL", "SUBMITTED"], rows)}\n`,
      );
    });
}
