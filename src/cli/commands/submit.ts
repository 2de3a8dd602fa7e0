import { randomUUID } from "node:crypto";
import type { Command } from "commander";
import type { Job } from "../../broker/api/schemas.ts";
import { ApiClient, CliError } from "../client.ts";
import { printJson } from "../format.ts";
import { loadJobFile, STDIN, submissionBody } from "../job-submission.ts";
import { describe } from "./index.ts";
import { waitForJobs } from "./wait.ts";

export function registerSubmit(program: Command): void {
  program
    .command("submit")
    .description(describe("submit"))
    .argument(
      "<file>",
      "the job file; - reads it from standard input (its inputs are then relative to the current folder)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  steward submit job.yaml --wait\n  echo '{command: hostname}' | steward submit -\n  generate-job | steward submit - --json   # inputs relative to the current folder",
    )
    .option("--wait", "wait for the job to end; exit 0 only if it succeeded")
    .option("--json", "print the whole job as JSON")
    .action(async (file: string, options: { wait?: boolean; json?: boolean }) => {
      const job = loadJobFile(file);
      const client = new ApiClient();
      // One key per submit: if the answer is lost (a broker dies, a connection breaks), the request
      // is sent again, to the next server too, and finds the job the first one made.
      let created: Job;
      try {
        const body = await submissionBody(job);
        created = await client.json<Job>("POST", "/api/v1/jobs", {
          ...body,
          headers: { ...body.headers, "idempotency-key": randomUUID() },
          idempotent: true,
        });
      } catch (error) {
        // The server checks the job file: its 400 names the field, as a local check would.
        if (error instanceof CliError && error.status === 400)
          throw new CliError(`${file === STDIN ? "standard input" : file}: ${error.message}`, 2);
        throw error;
      }
      if (options.json) printJson(created);
      else process.stdout.write(`${created.id}\n`);
      if (options.wait) process.exitCode = await waitForJobs(client, [created.id], null, !options.json);
    });
}
