import { type Command, InvalidArgumentError } from "commander";
import type { Job, JobSummary, Removed } from "../../broker/api/schemas.ts";
import { parseLifetime } from "../../common/model/tokens.ts";
import { ApiClient, CliError } from "../client.ts";
import { printJson } from "../format.ts";
import { describe } from "./index.ts";

/** cancel, hold, release, migrate: POST /api/v1/jobs/{id}/{action}. */
export function registerControl(program: Command): void {
  for (const action of ["cancel", "hold", "release"]) {
    program
      .command(action)
      .description(describe(action))
      .argument("<id>", "job id")
      .option("--json", "print the job as JSON")
      .action(async (id: string, options: { json?: boolean }) => {
        const job = await new ApiClient().json<Job>(
          "POST",
          `/api/v1/jobs/${encodeURIComponent(id)}/${action}`,
          { json: {} },
        );
        if (options.json) printJson(job);
        else process.stdout.write(`job ${job.id}: ${job.state}\n`);
      });
  }
  program
    .command("migrate")
    .description(describe("migrate"))
    .argument("<id>", "job id")
    .option("--to <host>", "the host to move to")
    .option("--json", "print the job as JSON")
    .action(async (id: string, options: { to?: string; json?: boolean }) => {
      const job = await new ApiClient().json<Job>("POST", `/api/v1/jobs/${encodeURIComponent(id)}/migrate`, {
        json: options.to ? { to: options.to } : {},
      });
      if (options.json) printJson(job);
      else process.stdout.write(`job ${job.id}: ${job.state}\n`);
    });
  program
    .command("rm")
    .description(describe("rm"))
    .argument("[ids...]", "job ids")
    .option(
      "--older-than <age>",
      "instead of ids: every job (of yours, unless an admin) that ended longer ago than this (30d, 12h, 90m, 2w)",
      (value: string) => {
        const ms = parseLifetime(value);
        if (ms === null) throw new InvalidArgumentError("an age such as 30d, 12h, 90m, 45s or 2w");
        return ms;
      },
    )
    .option("--json", "print the answers as JSON")
    .action(async (ids: string[], options: { olderThan?: number; json?: boolean }) => {
      const client = new ApiClient();
      if (options.olderThan === undefined && ids.length === 0)
        throw new CliError("name the jobs to remove, or give --older-than AGE", 2);
      if (options.olderThan !== undefined && ids.length > 0)
        throw new CliError("give job ids or --older-than, not both", 2);
      let targets = ids;
      const before = options.olderThan === undefined ? null : new Date(Date.now() - options.olderThan);
      if (before) targets = await endedBefore(client, before);
      const removed: Removed[] = [];
      for (const id of targets) {
        removed.push(await client.json<Removed>("DELETE", `/api/v1/jobs/${encodeURIComponent(id)}`));
        if (!options.json && before && removed.length % 100 === 0)
          process.stderr.write(`removed ${removed.length} of ${targets.length}\n`);
      }
      if (options.json) return printJson(before ? removed : removed[0]);
      if (!before) for (const id of targets) process.stdout.write(`job ${id} removed\n`);
      else
        process.stdout.write(
          `removed ${removed.length} job${removed.length === 1 ? "" : "s"} that ended before ${before.toISOString()}\n`,
        );
    });
}

/** The ids of the jobs (the caller may see) that ended before `before`, read page by page. */
async function endedBefore(client: ApiClient, before: Date): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await client.json<JobSummary[]>("GET", "/api/v1/jobs", {
      query: { all: 1, limit: 1000, after },
    });
    for (const job of page)
      if (job.endedAt !== null && Date.parse(job.endedAt) < before.getTime()) ids.push(job.id);
    if (page.length < 1000) return ids;
    after = page[page.length - 1].id;
  }
}
