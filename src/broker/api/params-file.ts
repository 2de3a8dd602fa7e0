// An array's parameters file (`array.paramsFile`), read from the blob store where the submit's
// upload put it (job-spec.ts resolveParamsLines): read at submit, once, so that the task count is
// known then and every task's start carries its own line, whichever client uploaded the file. The
// same for a job submitted alone and for each job of a workflow. The file is read as it comes,
// with bounds (model/params-file-reader.ts): one too large is refused by its stored size before a
// byte is read, one with too many lines or too long a line as soon as the reading passes it.

import { type JobSpec, resolveParamsLines } from "../../common/model/job-spec.ts";
import { JobFileError } from "../../common/model/jobfile-error.ts";
import { ParamsFileReader } from "../../common/model/params-file-reader.ts";
import type { JobFiles } from "./ports.ts";

/**
 * The job file with its array's parameters read from the input stored under job `id`; the file as
 * it is when it has no `paramsFile`. A problem with the file is a JobFileError whose field starts
 * with `field` (a workflow's `jobs.NAME.`; a job's own: nothing).
 */
export async function withParamsFile(
  spec: JobSpec,
  files: JobFiles,
  id: string,
  field = "",
): Promise<JobSpec> {
  const name = spec.array?.paramsFile;
  if (name === undefined) return spec;
  try {
    const file = files.input(id, name);
    const reader = new ParamsFileReader(name);
    // Refused by its stored size alone, before a byte is read.
    reader.checkSize((await file.size()) ?? 0);
    for await (const chunk of file.read()) reader.push(chunk as Buffer);
    return resolveParamsLines(spec, reader.end());
  } catch (error) {
    if (error instanceof JobFileError && field) {
      const message = error.message.startsWith(`${error.field}: `)
        ? error.message.slice(error.field.length + 2)
        : error.message;
      throw new JobFileError(`${field}${error.field}`, message);
    }
    throw error;
  }
}
