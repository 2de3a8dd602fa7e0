// An array's parameters file (`array.paramsFile`), read from the blob store where the submit's
// upload put it (job-spec.ts resolveParamsFile): read at submit, once, so that the task count is
// known then and every task's start carries its own line, whichever client uploaded the file. The
// same for a job submitted alone and for each job of a workflow.

import { type JobSpec, resolveParamsFile } from "../../common/model/job-spec.ts";
import { JobFileError } from "../../common/model/jobfile-error.ts";
import { inputKey } from "../store/blob-layout.ts";
import type { BlobStore } from "../store/blobs.ts";

/**
 * The job file with its array's parameters read from the input stored under job `id`; the file as
 * it is when it has no `paramsFile`. A problem with the file is a JobFileError whose field starts
 * with `field` (a workflow's `jobs.NAME.`; a job's own: nothing).
 */
export async function withParamsFile(
  spec: JobSpec,
  blobs: BlobStore,
  id: string,
  field = "",
): Promise<JobSpec> {
  const name = spec.array?.paramsFile;
  if (name === undefined) return spec;
  const chunks: Buffer[] = [];
  for await (const chunk of blobs.read(inputKey(id, name))) chunks.push(chunk as Buffer);
  try {
    return resolveParamsFile(spec, Buffer.concat(chunks).toString("utf8"));
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
