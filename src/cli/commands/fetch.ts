import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Command } from "commander";
import type { Job, OutputFile } from "../../common/api/jobs.ts";
import type { Workflow } from "../../common/api/workflows.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { relativePathProblem } from "../../common/model/relative-path.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { ApiClient } from "../client.ts";
import { printJson } from "../format.ts";

export function registerFetch(program: Command): void {
  program
    .command("fetch")
    .description(describe("fetch"))
    .argument("<id>", "job id, or a workflow's id (flow-N): each job's under DIR/<job name>/")
    .option("--to <dir>", "where to write", ".")
    .option("--json", "print the files written as JSON")
    .addHelpText(
      "after",
      "\nsteward fetch flow-N --to DIR writes each job's output files under DIR/<job name>/ (an array's under" +
        "\nDIR/<job name>/<task>/), in the workflow's order; a job that has not succeeded, or has no output" +
        "\nfiles, is skipped with a line on stderr (skipped: job 8 (train): failed). --json lists every file" +
        "\nwritten with its job's name and id.\n",
    )
    .action(async (id: string, options: { to: string; json?: boolean }) => {
      if (isWorkflowId(id)) return fetchWorkflow(new ApiClient(), id, options);
      const { written, bytes, root } = await fetchOutputs(new ApiClient(), id, options.to);
      if (options.json) printJson(written);
      process.stderr.write(`${fetchedLine(written.length, bytes)} under ${root}\n`);
    });
}

export interface FetchedOutputs {
  written: { task: number; path: string; bytes: number; file: string }[];
  bytes: number;
  root: string;
}

/** A job's committed output files, written under `to`: `<path>` for a single job, `<task>/<path>` for an array. */
export async function fetchOutputs(client: ApiClient, id: string, to: string): Promise<FetchedOutputs> {
  const job = await client.json<Job>("GET", `/api/v1/jobs/${encodeURIComponent(id)}`, {
    query: { tasks: 0, events: 0 },
  });
  const files = await client.json<OutputFile[]>("GET", `/api/v1/jobs/${encodeURIComponent(id)}/outputs`);
  const root = resolve(to);
  let bytes = 0;
  const written: FetchedOutputs["written"] = [];
  for (const file of files) {
    const target = job.taskCount > 1 ? join(root, String(file.task), file.path) : join(root, file.path);
    // The server names only paths that stay in their folder (checked at submit); a path from it that
    // does not (`../out-b/x`, which a prefix check of `out` would let through) is refused.
    if (relativePathProblem(file.path) !== null || relative(root, target).startsWith(".."))
      throw new CliError(`refusing to write outside ${root}: ${file.path}`);
    await mkdir(dirname(target), { recursive: true });
    const path = file.path.split("/").map(encodeURIComponent).join("/");
    const response = await client.request(
      "GET",
      `/api/v1/jobs/${encodeURIComponent(id)}/outputs/${file.task}/${path}`,
    );
    if (!response.body) throw new CliError(`empty answer for ${file.path}`);
    await pipeline(Readable.fromWeb(response.body), createWriteStream(target));
    bytes += file.bytes;
    written.push({ task: file.task, path: file.path, bytes: file.bytes, file: target });
  }
  return { written, bytes, root };
}

/**
 * `fetch flow-N`: each succeeded job's outputs under DIR/<job name>/, in the workflow's order; the
 * others (not succeeded, removed, without outputs) skipped, one line each on stderr.
 */
async function fetchWorkflow(
  client: ApiClient,
  id: string,
  options: { to: string; json?: boolean },
): Promise<void> {
  const workflow = await client.json<Workflow>("GET", `/api/v1/workflows/${encodeURIComponent(id)}`);
  const root = resolve(options.to);
  const written: (FetchedOutputs["written"][number] & { name: string; job: string })[] = [];
  let bytes = 0;
  let jobs = 0;
  for (const member of workflow.graph) {
    const label = `job ${member.job} (${member.name})`;
    if (member.state !== "succeeded") {
      process.stderr.write(`skipped: ${label}: ${member.state ?? "removed"}\n`);
      continue;
    }
    // A job's name is a word of the workflow file (no slash): its folder stays under DIR.
    const fetched = await fetchOutputs(client, member.job, join(root, member.name));
    if (fetched.written.length === 0) {
      process.stderr.write(`skipped: ${label}: no output files\n`);
      continue;
    }
    jobs++;
    bytes += fetched.bytes;
    written.push(...fetched.written.map((file) => ({ name: member.name, job: member.job, ...file })));
  }
  if (options.json) printJson(written);
  process.stderr.write(
    `${fetchedLine(written.length, bytes)} under ${root} (from ${jobs} job${jobs === 1 ? "" : "s"} of ${workflow.workflow})\n`,
  );
}

/** `2 files, 120 bytes written`. */
export function fetchedLine(files: number, bytes: number): string {
  return `${files} file${files === 1 ? "" : "s"}, ${bytes} bytes written`;
}
