import { randomUUID } from "node:crypto";
import type { Command } from "commander";
import type { CheckedJobFile, Job, WorkflowCreated } from "../../broker/api/schemas.ts";
import { ApiClient, CliError } from "../client.ts";
import { printJson } from "../format.ts";
import {
  type LoadedJobFile,
  type LoadedWorkflowFile,
  loadJobFile,
  loadWorkflowFile,
  STDIN,
  submissionBody,
  workflowBody,
} from "../job-submission.ts";
import { renderExplanation } from "./explain.ts";
import { describe } from "./index.ts";
import { waitForJobs } from "./wait.ts";

export function registerSubmit(program: Command): void {
  program
    .command("submit")
    .description(describe("submit"))
    .argument(
      "<file>",
      "the job file, or a workflow file (top-level jobs:); - reads it from standard input (its inputs are then relative to the current folder)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  steward submit job.yaml --wait\n  echo '{command: hostname}' | steward submit -\n  generate-job | steward submit - --json   # inputs relative to the current folder\n  steward submit --dry-run job.yaml        # valid? which hosts and pools could take it now?\n\n" +
        "--dry-run checks the job file as a submit does (the same errors, exit 2) and prints what\n" +
        "steward explain would say of the job if it were submitted now, without making it: the hosts\n" +
        "that match, the requirements clause by clause, the pools. A valid file exits 0, even when no\n" +
        "host matches it now.\n\n" +
        "A workflow file (jobs: {NAME: job file}, each job's dependsOn naming other jobs of the file by\n" +
        "NAME) makes all its jobs at once, or none; submit prints the workflow's id (flow-N), and\n" +
        "--json its jobs' ids by name. steward show flow-N draws it; steward retry flow-N reruns what failed.",
    )
    .option("--wait", "wait for the job to end; exit 0 only if it succeeded")
    .option("--json", "print the whole job as JSON (with --dry-run: the job file read and its explanation)")
    .option("--dry-run", "check the job file and explain it against the hosts now; no job is made")
    .action(async (file: string, options: { wait?: boolean; json?: boolean; dryRun?: boolean }) => {
      const job = loadJobFile(file);
      const client = new ApiClient();
      const label = file === STDIN ? "standard input" : file;
      const workflow = loadWorkflowFile(job, label);
      if (workflow) return submitWorkflow(client, label, workflow, options);
      if (options.dryRun) return dryRun(client, file, job, options.json === true);
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
      if (options.wait)
        process.exitCode = await waitForJobs(client, [created.id], null, {
          progress: !options.json,
          report: true,
        });
    });
}

/** submit --dry-run: the server checks the job file and explains it; nothing is made. */
async function dryRun(client: ApiClient, file: string, job: LoadedJobFile, json: boolean): Promise<void> {
  const label = file === STDIN ? "standard input" : file;
  let answer: CheckedJobFile;
  try {
    // The job file alone (a dry run takes no multipart): its inputs were found on disk already.
    const body = job.text !== undefined ? await submissionBody(job) : { json: job.raw };
    answer = await client.json<CheckedJobFile>("POST", "/api/v1/jobs", {
      ...body,
      query: { dryRun: 1, explain: 1 },
      idempotent: true,
    });
  } catch (error) {
    if (error instanceof CliError && error.status === 400)
      throw new CliError(`${label}: ${error.message}`, 2);
    throw error;
  }
  if (json) return printJson(answer);
  const { spec, explanation } = answer;
  if (!explanation) throw new CliError("the server answered no explanation (is it older than this client?)");
  const tasks = spec.array ? (spec.array.count ?? spec.array.params?.length) : 1;
  // A parameters file is read at submit: a dry run has not uploaded it.
  const counted =
    tasks === undefined
      ? `a task per line of ${spec.array?.paramsFile ?? "its parameters file"}`
      : `${tasks} task${tasks === 1 ? "" : "s"}`;
  const headline = `${label} is valid (${counted}); submitted now, the job would be ${explanation.state}`;
  process.stdout.write(renderExplanation(explanation, headline));
  if (explanation.hosts.length > 0 && explanation.summary.matching === 0)
    process.stdout.write("no host matches it now: it would wait until one does (steward hosts lists them)\n");
}

/** A workflow file: every job made at once; prints the workflow's id (the jobs' ids by name with --json). */
async function submitWorkflow(
  client: ApiClient,
  label: string,
  workflow: LoadedWorkflowFile,
  options: { wait?: boolean; json?: boolean; dryRun?: boolean },
): Promise<void> {
  if (options.dryRun) throw new CliError(`${label}: --dry-run takes a job file, not a workflow file`, 2);
  let created: WorkflowCreated;
  try {
    // One key per submit, as for a job: a lost answer is asked again and finds the workflow made.
    const body = await workflowBody(workflow);
    created = await client.json<WorkflowCreated>("POST", "/api/v1/workflows", {
      ...body,
      headers: { ...body.headers, "idempotency-key": randomUUID() },
      idempotent: true,
    });
  } catch (error) {
    if (error instanceof CliError && error.status === 400)
      throw new CliError(`${label}: ${error.message}`, 2);
    throw error;
  }
  if (options.json) printJson(created);
  else process.stdout.write(`${created.workflow}\n`);
  if (options.wait)
    process.exitCode = await waitForJobs(client, Object.values(created.jobs), null, {
      progress: !options.json,
      report: true,
    });
}
