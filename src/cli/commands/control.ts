import type { Command } from "commander";
import type { Job, Removed } from "../../api/schemas.ts";
import { ApiClient } from "../client.ts";
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
    .argument("<id>", "job id")
    .option("--json", "print the answer as JSON")
    .action(async (id: string, options: { json?: boolean }) => {
      const answer = await new ApiClient().json<Removed>("DELETE", `/api/v1/jobs/${encodeURIComponent(id)}`);
      if (options.json) return printJson(answer);
      process.stdout.write(`job ${id} removed\n`);
    });
}
