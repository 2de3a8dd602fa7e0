// Reading a job file on the client: parse, validate (the server validates again), check that the
// inputs exist and stay inside the job file's folder, and build the request.

import { existsSync, openAsBlob, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { JobFileError, type JobSpec, parseJobFileText, validateJobSpec } from "../model/jobfile.ts";
import { CliError } from "./client.ts";

export interface LoadedJobFile {
  raw: Record<string, unknown>;
  spec: JobSpec;
  folder: string;
}

export function loadJobFile(path: string): LoadedJobFile {
  if (!existsSync(path)) throw new CliError(`no such job file: ${path}`, 2);
  const folder = dirname(resolve(path));
  try {
    const raw = parseJobFileText(readFileSync(path, "utf8"));
    const spec = validateJobSpec(raw);
    spec.inputs.forEach((input, index) => {
      const file = join(folder, input);
      if (!existsSync(file) || !statSync(file).isFile()) {
        throw new JobFileError(`inputs[${index}]`, `${input}: no such file in ${folder}`);
      }
    });
    return { raw: raw as Record<string, unknown>, spec, folder };
  } catch (error) {
    if (error instanceof JobFileError) throw new CliError(`${path}: ${error.message}`, 2);
    throw error;
  }
}

/** The request body: JSON when there are no inputs, else multipart with the files streamed from disk. */
export async function submissionBody(job: LoadedJobFile): Promise<{ json?: unknown; body?: FormData }> {
  if (job.spec.inputs.length === 0) return { json: job.raw };
  const form = new FormData();
  form.set("job", JSON.stringify(job.raw));
  for (const input of job.spec.inputs) {
    form.append(input, await openAsBlob(join(job.folder, input)), input);
  }
  return { body: form };
}
