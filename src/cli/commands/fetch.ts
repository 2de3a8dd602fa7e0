import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Command } from "commander";
import type { Job, OutputFile } from "../../broker/api/schemas.ts";
import { ApiClient, CliError } from "../client.ts";
import { printJson } from "../format.ts";
import { describe } from "./index.ts";

export function registerFetch(program: Command): void {
  program
    .command("fetch")
    .description(describe("fetch"))
    .argument("<id>", "job id")
    .option("--to <dir>", "where to write", ".")
    .option("--json", "print the files written as JSON")
    .action(async (id: string, options: { to: string; json?: boolean }) => {
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
    if (!target.startsWith(root)) throw new CliError(`refusing to write outside ${root}: ${file.path}`);
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

/** `2 files, 120 bytes written`. */
export function fetchedLine(files: number, bytes: number): string {
  return `${files} file${files === 1 ? "" : "s"}, ${bytes} bytes written`;
}
