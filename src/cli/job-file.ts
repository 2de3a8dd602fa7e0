// Reading a job file on the client: parse it, check that its inputs exist and stay inside the job
// file's folder, and build the request. The schema is the server's to check (it answers 400 naming
// the field, which `submit` prints as the job file's error): the CLI does not load the schema's
// libraries, so a submit starts in a tenth of a second.

import { existsSync, openAsBlob, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, normalize, resolve } from "node:path";
import { JobFileError } from "../model/jobfile-error.ts";
import { parseJobFileText } from "../model/jobfile-text.ts";
import { CliError } from "./cli-error.ts";

export interface LoadedJobFile {
  raw: Record<string, unknown>;
  /** The input files named (valid relative paths only; the server refuses the others). */
  inputs: string[];
  folder: string;
}

/** A path the job file may name: relative, and not leaving its folder. */
function staysInside(path: string): boolean {
  const normal = normalize(path);
  return !isAbsolute(path) && normal !== ".." && !normal.startsWith("../");
}

export function loadJobFile(path: string): LoadedJobFile {
  if (!existsSync(path)) throw new CliError(`no such job file: ${path}`, 2);
  const folder = dirname(resolve(path));
  try {
    const raw = parseJobFileText(readFileSync(path, "utf8"));
    if (typeof raw !== "object" || raw === null || Array.isArray(raw))
      throw new JobFileError("", "a job file is a mapping of fields (command, inputs, ...)");
    const record = raw as Record<string, unknown>;
    const named = Array.isArray(record.inputs) ? record.inputs : [];
    const inputs: string[] = [];
    named.forEach((input, index) => {
      if (typeof input !== "string" || !staysInside(input)) return;
      const file = join(folder, input);
      if (!existsSync(file) || !statSync(file).isFile()) {
        throw new JobFileError(`inputs[${index}]`, `${input}: no such file in ${folder}`);
      }
      inputs.push(input);
    });
    return { raw: record, inputs, folder };
  } catch (error) {
    if (error instanceof JobFileError) throw new CliError(`${path}: ${error.message}`, 2);
    throw error;
  }
}

/** The request body: JSON when there are no inputs, else multipart with the files streamed from disk. */
export async function submissionBody(job: LoadedJobFile): Promise<{ json?: unknown; body?: FormData }> {
  if (job.inputs.length === 0) return { json: job.raw };
  const form = new FormData();
  form.set("job", JSON.stringify(job.raw));
  for (const input of job.inputs) {
    form.append(input, await openAsBlob(join(job.folder, input)), input);
  }
  return { body: form };
}
