import type { Command } from "commander";
import type { JobSummary } from "../../broker/api/schemas.ts";
import { ApiClient } from "../client.ts";
import { printJson, shortTime, table } from "../format.ts";
import { integer } from "../numbers.ts";
import { describe } from "./index.ts";

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
    .option("--json", "print JSON")
    .action(
      async (options: {
        all?: boolean;
        state?: string;
        user?: string;
        name?: string;
        limit?: number;
        after?: string;
        json?: boolean;
      }) => {
        const client = new ApiClient();
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
        if (jobs.length === 0) return void process.stdout.write("no jobs\n");
        const rows = jobs.map((job) => [
          job.id,
          job.name,
          job.owner,
          job.state,
          job.qos,
          job.priority,
          `${job.counts.succeeded}/${job.taskCount}`,
          job.counts.running,
          job.counts.failed,
          shortTime(job.createdAt),
        ]);
        process.stdout.write(
          `${table(["ID", "NAME", "OWNER", "STATE", "QOS", "PRIO", "DONE", "RUN", "FAIL", "SUBMITTED"], rows)}\n`,
        );
      },
    );
}
