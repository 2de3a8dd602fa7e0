// POST /api/v1/jobs: a job submitted as JSON, as YAML, or as multipart with its input files; or,
// with dryRun=1, its file checked and answered as the server reads it (explained with explain=1).

import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errors } from "../../../../common/api/errors.ts";
import { checkedJobFileSchema } from "../../../../common/api/job-file.ts";
import { jobSchema } from "../../../../common/api/jobs.ts";
import { json } from "../../../../common/api/json-answer.ts";
import { isUrlInput, uploadedInputs } from "../../../../common/model/input-spec.ts";
import { type JobSpec, validateJobSpec } from "../../../../common/model/job-spec.ts";
import { isWorkflowFile } from "../../../../common/model/workflow.ts";
import { monotonicMs } from "../../../../common/time/clocks.ts";
import { InvalidRequestError } from "../../../reactor/errors.ts";
import type { SubmittedJob } from "../../../reactor/ports.ts";
import { seesAllJobs } from "../../access.ts";
import { START_ADMIN } from "../../auth.ts";
import { fileFieldData, multipartParts, readPastParts, storeUpload, submitBody } from "../../multipart.ts";
import { withParamsFile } from "../../params-file.ts";
import type { ApiPorts, JobFiles } from "../../ports.ts";
import { submitRefusal } from "../../rate-limit.ts";
import { flag } from "../../requests.ts";
import { type Submitter, submitKeyOf, submitterOf } from "../../submitter.ts";
import { MAX_JOB_FILE_BYTES } from "../../upload-limit.ts";
import { jobView } from "../../views.ts";
import type { JobRouteDeps } from "./deps.ts";

/**
 * The job file as JSON, or multipart/form-data with a `job` field then one part per input. The
 * job file is checked in the handler (validateJobSpec), the same for both, so that an error names
 * its field the way the job file's own errors do; the document still shows its schema.
 */
const jobSubmitBody = submitBody({
  json: { $ref: "#/components/schemas/JobFileInput" },
  yaml: "the job file as YAML, as on disk",
  field: "job",
  fieldDescription: "the job file as JSON (or as YAML, as on disk); comes first",
  parts: "one file part per input, named by its path",
});

const submitQuery = z.object({
  dryRun: flag(
    false,
    "1: check the job file (JSON or YAML) and answer it as the server reads it, with its defaults; nothing is created",
  ),
  explain: flag(
    false,
    "with dryRun=1: answer also what `steward explain` would say of the job if it were submitted now (hosts, pools, requirements clause by clause)",
  ),
});

export function registerJobSubmitRoute(
  app: FastifyInstance,
  { ports, files, maxUploadBytes, submitLimiter }: JobRouteDeps,
): void {
  app.withTypeProvider<ZodTypeProvider>().post(
    "/api/v1/jobs",
    {
      bodyLimit: MAX_JOB_FILE_BYTES,
      schema: {
        summary:
          "Submit a job (the job file as JSON or YAML, or multipart with a `job` field and one part per input)",
        consumes: ["application/json", "application/yaml", "multipart/form-data"],
        querystring: submitQuery,
        body: jobSubmitBody,
        response: {
          200: json(checkedJobFileSchema, "a dry run: the job file is valid, and this is how it reads"),
          201: json(jobSchema, "accepted and durable: the job (without tasks for an array)"),
          ...errors(400, 401, 403, 413, 429, 507),
        },
      },
    },
    async (request, reply) => {
      // A dry run creates nothing (no job, no blob, no rate), so it needs the job file alone: a
      // client that cannot parse YAML learns the inputs to upload from it.
      if (request.query.dryRun) {
        if (request.isMultipart())
          throw new InvalidRequestError(
            "dryRun",
            "a dry run takes the job file as JSON or YAML, not multipart",
          );
        // Refused as a submit would be: its QoS tier, the quotas (400, 429).
        refuseWorkflowFile(request.body);
        const { owner, dependencyOwner, allowedQos } = submitterOf(request);
        const spec = ports.read.admitDraft(validateJobSpec(request.body), owner, allowedQos);
        if (!request.query.explain) return { spec };
        // Explained as the submitter's job: a user's dependencies are their own jobs, and other
        // users' jobs ahead are counted, not named (as GET /api/v1/jobs/{id}/explain).
        const { principal } = request;
        const viewer = principal && !seesAllJobs(principal.role) ? principal.user : null;
        return { spec, explanation: ports.read.explainDraft(spec, owner, dependencyOwner, viewer) };
      }
      const principal = request.principal ?? START_ADMIN;
      const refusal =
        principal.role === "admin" ? null : submitRefusal(submitLimiter, principal, monotonicMs());
      if (refusal) return reply.code(429).header("retry-after", refusal.retryAfter).send(refusal.answer);
      const submitter = submitterOf(request);
      // A submit repeated with its key answers the job the first one made.
      const key = submitKeyOf(request);
      const { job, events } = request.isMultipart()
        ? await submitMultipart(request, { ports, files, maxUploadBytes }, submitter, key)
        : await submitJson(request.body, ports, submitter, key);
      reply.code(201);
      // A new job's events came with its commit; an earlier submit's job's are read.
      return jobView(job, events ?? (await ports.read.jobEvents(job.header.id)), job.tasks.length === 1);
    },
  );
}

async function submitJson(
  body: unknown,
  ports: ApiPorts,
  { owner, dependencyOwner, allowedQos }: Submitter,
  key: string | null,
): Promise<SubmittedJob> {
  refuseWorkflowFile(body);
  const spec = validateJobSpec(body);
  // URL inputs are fetched by the agents: only paths need a multipart submit.
  const uploaded = spec.inputs.findIndex((input) => !isUrlInput(input));
  if (uploaded >= 0) {
    throw new InvalidRequestError(
      `inputs[${uploaded}]`,
      `${spec.inputs[uploaded]}: file was not uploaded (send the job as multipart/form-data with its input files)`,
    );
  }
  return ports.jobs.submit({ owner, submitKey: key, dependencyOwner, allowedQos }, async () => ({
    spec,
    inputs: [],
  }));
}

/** A workflow file sent as a job: refused naming where it goes (its `jobs` would be an unknown key). */
function refuseWorkflowFile(body: unknown): void {
  if (isWorkflowFile(body))
    throw new InvalidRequestError(
      "jobs",
      "this is a workflow file: send it to POST /api/v1/workflows (steward submit does)",
    );
}

/**
 * Multipart: a field `job` (the job file as JSON or YAML) first, then one file part per input,
 * named by its path.
 */
async function submitMultipart(
  request: FastifyRequest,
  { ports, files, maxUploadBytes }: { ports: ApiPorts; files: JobFiles; maxUploadBytes: number },
  { owner, dependencyOwner, allowedQos }: Submitter,
  key: string | null,
) {
  let id: string | null = null;
  let received = false;
  try {
    const submitted = await ports.jobs.submit(
      { owner, submitKey: key, dependencyOwner, allowedQos },
      async (newId) => {
        received = true;
        let spec: JobSpec | null = null;
        // Each input stored, with the SHA-256 its store computed (sent with each start, and the scheduler's data affinity).
        const stored = new Map<string, string>();
        for await (const part of multipartParts(request)) {
          if (part.type === "field") {
            if (part.fieldname !== "job") continue;
            const field = fileFieldData(request, part);
            refuseWorkflowFile(field);
            spec = validateJobSpec(field);
            id = await newId();
            continue;
          }
          if (!spec || !id) {
            part.file.resume();
            throw new InvalidRequestError("job", "the job field must come before the input files");
          }
          const path = part.fieldname;
          if (!uploadedInputs(spec.inputs).includes(path)) {
            part.file.resume();
            throw new InvalidRequestError(
              "inputs",
              `${path} was uploaded but is not one of the job's inputs`,
            );
          }
          const into = id;
          const what = `input ${path}`;
          await storeUpload(part.file, { maxUploadBytes, what, shown: what }, async (content) => {
            stored.set(path, (await files.storeInput(into, path, content)).sha256);
          });
        }
        if (!spec || !id) throw new InvalidRequestError("job", "the job field is missing");
        const missing = spec.inputs.findIndex((input) => !isUrlInput(input) && !stored.has(input));
        if (missing >= 0) {
          throw new InvalidRequestError(
            `inputs[${missing}]`,
            `${spec.inputs[missing]}: file was not uploaded`,
          );
        }
        const inputs = uploadedInputs(spec.inputs);
        return {
          spec: await withParamsFile(spec, files, id),
          inputs,
          inputDigests: Object.fromEntries(inputs.map((path) => [path, stored.get(path)!])),
          id,
        };
      },
    );
    if (!received) await readPastParts(request);
    return submitted;
  } catch (error) {
    if (id) await files.deleteJobFiles(id);
    throw error;
  }
}
