// A workflow's dry run (`POST /api/v1/workflows?dryRun=1`): the file checked as a submit checks it
// (every job's file, names, dependencies, cycles, each job's QoS tier and limits), and with
// explain=1 each job explained as `steward explain` would explain it once what it waits for is
// done: the hosts that match, the requirements clause by clause, the pools. Nothing is made.

import type { FastifyRequest } from "fastify";
import type { CheckedWorkflowFile } from "../../../common/api/workflows.ts";
import { validateWorkflowFile } from "../../../common/model/workflow.ts";
import { InvalidRequestError } from "../../reactor/errors.ts";
import { seesAllJobs } from "../access.ts";
import type { ApiPorts } from "../ports.ts";
import { submitterOf } from "../submitter.ts";

export function dryRunWorkflow(
  request: FastifyRequest,
  ports: ApiPorts,
  explain: boolean,
): CheckedWorkflowFile {
  if (request.isMultipart())
    throw new InvalidRequestError(
      "dryRun",
      "a dry run takes the workflow file as JSON or YAML, not multipart",
    );
  const file = validateWorkflowFile(request.body);
  const { owner, allowedQos } = submitterOf(request);
  const { principal } = request;
  const viewer = principal && !seesAllJobs(principal.role) ? principal.user : null;
  const jobs = file.jobs.map((job) => {
    // Refused as its submit would be (its QoS tier, the limits: 400, 429), under the job's name.
    const admitted = underJob(job.name, () => ports.read.admitDraft(job.spec, owner, allowedQos));
    if (!explain) return { name: job.name, dependsOn: job.dependsOn, spec: admitted };
    // Explained as if its dependencies were done: they name jobs of the file, which no job id is.
    const alone = { ...admitted, dependsOn: [] };
    const explanation = ports.read.explainDraft(alone, owner, null, viewer);
    return { name: job.name, dependsOn: job.dependsOn, spec: admitted, explanation };
  });
  return { name: file.name, jobs };
}

/** A job's admission refused (400) names its field under `jobs.NAME`, as the file's own errors do. */
function underJob<T>(name: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof InvalidRequestError)
      throw new InvalidRequestError(
        `jobs.${name}.${error.field}`,
        error.message.slice(error.field.length + 2),
      );
    throw error;
  }
}
