import { randomUUID } from "node:crypto";
import type { Command } from "commander";
import type { Explanation } from "../../common/api/explanation.ts";
import type { CheckedJobFile } from "../../common/api/job-file.ts";
import type { Job } from "../../common/api/jobs.ts";
import type { CheckedWorkflowFile, WorkflowCreated } from "../../common/api/workflows.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { ApiClient, type RequestOptions } from "../client.ts";
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
        "--json its jobs' ids by name. steward show flow-N draws it; steward retry flow-N reruns what failed.\n" +
        "With --dry-run it checks the workflow file (every job's file, unknown dependencies, cycles) and\n" +
        "prints, job by job in the order they would be made, what the dry run of a job prints.",
    )
    .option("--wait", "wait for the job to end; exit 0 only if it succeeded")
    .option("--json", "print the whole job as JSON (with --dry-run: the job file read and its explanation)")
    .option(
      "--dry-run",
      "check the job (or workflow) file and explain each job against the hosts now; nothing is made",
    )
    .action(async (file: string, options: { wait?: boolean; json?: boolean; dryRun?: boolean }) => {
      const job = loadJobFile(file);
      const client = new ApiClient();
      const label = file === STDIN ? "standard input" : file;
      const workflow = loadWorkflowFile(job, label);
      if (workflow) return submitWorkflow(client, label, workflow, options);
      if (options.dryRun) return dryRun(client, file, job, options.json === true);
      // The server checks the job file: its 400 names the field, as a local check would.
      const created = await submitted<Job>(client, "/api/v1/jobs", label, () => submissionBody(job));
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
  const answer = await checkedByServer<CheckedJobFile>(
    client,
    "/api/v1/jobs",
    job.source ?? JSON.stringify(job.raw),
    label,
  );
  if (json) return printJson(answer);
  const { spec, explanation } = answer;
  if (!explanation) throw new CliError("the server answered no explanation (is it older than this client?)");
  const headline = `${label} is valid (${tasksOf(spec)}); submitted now, the job would be ${explanation.state}`;
  process.stdout.write(explained(explanation, headline));
}

/**
 * A dry run's answer for a job or workflow file: its text alone (a dry run takes no multipart; its
 * inputs were found on disk already), as read, so the server's errors name its lines; a 400 is the
 * file's error (exit 2).
 */
function checkedByServer<T>(client: ApiClient, path: string, text: string, label: string): Promise<T> {
  return postedFile<T>(client, path, label, async () => ({
    body: text,
    headers: { "content-type": "application/yaml" },
    query: { dryRun: 1, explain: 1 },
    idempotent: true,
  }));
}

/**
 * A submit, sent with a key of its own: if the answer is lost (a broker dies, a connection breaks),
 * the request is sent again, to the next server too, and finds what the first one made.
 */
function submitted<T>(
  client: ApiClient,
  path: string,
  label: string,
  body: () => Promise<RequestOptions>,
): Promise<T> {
  return postedFile<T>(client, path, label, async () => {
    const options = await body();
    return { ...options, headers: { ...options.headers, "idempotency-key": randomUUID() }, idempotent: true };
  });
}

/** The answer to a POST of a job or workflow file; a 400 is the file's error (exit 2), after its label. */
async function postedFile<T>(
  client: ApiClient,
  path: string,
  label: string,
  request: () => Promise<RequestOptions>,
): Promise<T> {
  try {
    return await client.json<T>("POST", path, await request());
  } catch (error) {
    if (error instanceof CliError && error.status === 400)
      throw new CliError(`${label}: ${error.message}`, 2);
    throw error;
  }
}

/** `4 tasks`; a parameters file is read at submit, which a dry run has not uploaded it for. */
function tasksOf(spec: CheckedJobFile["spec"]): string {
  const tasks = spec.array ? (spec.array.count ?? spec.array.params?.length) : 1;
  return tasks === undefined
    ? `a task per line of ${spec.array?.paramsFile ?? "its parameters file"}`
    : `${tasks} task${tasks === 1 ? "" : "s"}`;
}

/** An explanation under its headline, and a word when no host matches now. */
function explained(explanation: Explanation, headline: string): string {
  const none =
    explanation.hosts.length > 0 && explanation.summary.matching === 0
      ? "no host matches it now: it would wait until one does (steward hosts lists them)\n"
      : "";
  return renderExplanation(explanation, headline) + none;
}

/**
 * submit --dry-run of a workflow file: the server checks it as a submit does (every job's file,
 * the names, dependencies and cycles) and explains each job, in the order a submit makes them;
 * nothing is made.
 */
async function dryRunWorkflow(
  client: ApiClient,
  label: string,
  workflow: LoadedWorkflowFile,
  json: boolean,
): Promise<void> {
  const answer = await checkedByServer<CheckedWorkflowFile>(
    client,
    "/api/v1/workflows",
    workflow.text,
    label,
  );
  if (json) return printJson(answer);
  const count = answer.jobs.length;
  const parts = [`${label} is a valid workflow (${count} job${count === 1 ? "" : "s"}); nothing was made\n`];
  for (const job of answer.jobs) {
    const { explanation } = job;
    if (!explanation)
      throw new CliError("the server answered no explanation (is it older than this client?)");
    const waits =
      job.dependsOn.length === 0
        ? "submitted now, it would be"
        : `waits for ${job.dependsOn.map(edgeWords).join(", ")}; then it would be`;
    parts.push(
      explained(explanation, `job ${job.name} (${tasksOf(job.spec)}): ${waits} ${explanation.state}`),
    );
  }
  process.stdout.write(parts.join("\n"));
}

/** `prep`, `prep to end`, `prep to fail`, with ` task by task` under `tasks: same`. */
function edgeWords(edge: CheckedWorkflowFile["jobs"][number]["dependsOn"][number]): string {
  const when = edge.when === "succeeded" ? "" : edge.when === "ended" ? " to end" : " to fail";
  return `${edge.name}${when}${edge.sameTasks ? " task by task" : ""}`;
}

/** A workflow file: every job made at once; prints the workflow's id (the jobs' ids by name with --json). */
async function submitWorkflow(
  client: ApiClient,
  label: string,
  workflow: LoadedWorkflowFile,
  options: { wait?: boolean; json?: boolean; dryRun?: boolean },
): Promise<void> {
  if (options.dryRun) return dryRunWorkflow(client, label, workflow, options.json === true);
  const created = await submitted<WorkflowCreated>(client, "/api/v1/workflows", label, () =>
    workflowBody(workflow),
  );
  if (options.json) printJson(created);
  else process.stdout.write(`${created.workflow}\n`);
  if (options.wait)
    process.exitCode = await waitForJobs(client, Object.values(created.jobs), null, {
      progress: !options.json,
      report: true,
    });
}
