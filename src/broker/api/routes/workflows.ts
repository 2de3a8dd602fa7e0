// /api/v1/workflows: submit a workflow file (model/workflow.ts), list workflows, show one with its
// jobs' states, retry what failed.

import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errors } from "../../../common/api/errors.ts";
import { json } from "../../../common/api/json-answer.ts";
import {
  checkedWorkflowFileSchema,
  type Workflow,
  type WorkflowCreated,
  type WorkflowJobs,
  type WorkflowSummary,
  workflowCreatedSchema,
  workflowJobsSchema,
  workflowRetrySchema,
  workflowSchema,
  workflowSummarySchema,
} from "../../../common/api/workflows.ts";
import { isUrlInput, uploadedInputs } from "../../../common/model/input-spec.ts";
import { emptyCounts } from "../../../common/model/job-state.ts";
import type { WorkflowRecord } from "../../../common/model/records.ts";
import { isEndedState } from "../../../common/model/states.ts";
import { validateWorkflowFile, type WorkflowFile, workflowState } from "../../../common/model/workflow.ts";
import { monotonicMs } from "../../../common/time/clocks.ts";
import { InvalidRequestError, NotFoundError } from "../../reactor/errors.ts";
import type { WorkflowJobsTouched } from "../../reactor/handlers/workflow-control.ts";
import type { WorkflowIds } from "../../reactor/ports.ts";
import { seesAllJobs } from "../access.ts";
import { actorOf, START_ADMIN } from "../auth.ts";
import { fileFieldData, multipartParts, readPastParts, storeUpload, submitBody } from "../multipart.ts";
import { withParamsFile } from "../params-file.ts";
import type { ApiPorts, JobFiles } from "../ports.ts";
import { type SubmitRateLimiter, submitRefusal } from "../rate-limit.ts";
import { flag } from "../requests.ts";
import { ownerOf, submitKeyOf, submitterOf } from "../submitter.ts";
import { iso } from "../views.ts";
import { dryRunWorkflow } from "./workflow-dry-run.ts";

/** The largest workflow file, in bytes: room for its many jobs (10,000 small ones take about 1 MiB). */
export const MAX_WORKFLOW_FILE_BYTES = 16 * 1024 * 1024;

export interface WorkflowRouteDeps {
  ports: ApiPorts;
  files: JobFiles;
  maxUploadBytes: number;
  submitLimiter: SubmitRateLimiter;
}

const workflowSubmitQuery = z.object({
  dryRun: flag(
    false,
    "1: check the workflow file (JSON or YAML) as a submit checks it: every job's file, its names, dependencies and cycles, each job's QoS tier; nothing is made",
  ),
  explain: flag(
    false,
    "with dryRun=1: answer also, for each job, what `steward explain` would say of it submitted now once what it waits for is done (hosts, pools, requirements clause by clause)",
  ),
});

const workflowListQuery = z.object({
  all: flag(false, "include workflows whose jobs have all ended"),
  user: z.string().min(1).optional().meta({ description: "only this owner's workflows" }),
});

const workflowParams = z.object({ id: z.string().min(1).meta({ description: "workflow id (flow-N)" }) });

const workflowSubmitBody = submitBody({
  json: {
    type: "object",
    description:
      "a workflow file: `jobs: {NAME: job file}` (each job's dependsOn names jobs of the workflow by NAME), optional `name`",
  },
  yaml: "the workflow file as YAML, as on disk",
  field: "workflow",
  fieldDescription: "the workflow file as JSON or YAML; comes first",
  parts: "one file part per input of a job, named NAME/PATH (the job's name, then the input's path)",
});

/** The workflow as the API shows it: its jobs by name, and its graph with each job's state now. */
export function workflowView(workflow: WorkflowRecord, ports: ApiPorts): Workflow {
  const graph = workflow.jobs.map((member) => {
    const header = ports.read.header(member.job);
    return {
      name: member.name,
      job: member.job,
      state: header?.state ?? null,
      taskCount: header?.taskCount ?? 0,
      counts: header ? { ...header.counts } : emptyCounts(),
      endedAt: header ? iso(header.endedAt) : null,
      dependsOn: member.dependsOn.map((edge) => ({ ...edge })),
    };
  });
  return {
    ...createdView(workflow),
    owner: workflow.owner,
    createdAt: iso(workflow.createdAt),
    state: workflowState(graph.map((job) => job.state ?? undefined)),
    graph,
  };
}

function createdView(workflow: WorkflowRecord): WorkflowCreated {
  return {
    workflow: workflow.id,
    name: workflow.name,
    jobs: Object.fromEntries(workflow.jobs.map((member) => [member.name, member.job])),
  };
}

/** A workflow as the list shows it, or null once every job of it was removed. */
function summaryView(workflow: WorkflowRecord, ports: ApiPorts): WorkflowSummary | null {
  const states = workflow.jobs.map((member) => ports.read.header(member.job)?.state);
  if (states.every((state) => state === undefined)) return null;
  return {
    ...createdView(workflow),
    owner: workflow.owner,
    createdAt: iso(workflow.createdAt),
    state: workflowState(states),
  };
}

/** flow-N's number, for the list's order. */
function workflowNumber(id: string): number {
  return Number(id.slice(id.lastIndexOf("-") + 1));
}

/** The workflow, if the request's principal may see it (another user's answers 404, as absent). */
function visibleWorkflow(request: FastifyRequest, ports: ApiPorts, id: string): WorkflowRecord {
  const workflow = ports.read.workflow(id);
  const principal = request.principal;
  if (!workflow || (principal && !seesAllJobs(principal.role) && workflow.owner !== principal.user))
    throw new NotFoundError(`no workflow ${id}`);
  return workflow;
}

export function registerWorkflowRoutes(
  app: FastifyInstance,
  { ports, files, maxUploadBytes, submitLimiter }: WorkflowRouteDeps,
): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.post(
    "/api/v1/workflows",
    {
      bodyLimit: MAX_WORKFLOW_FILE_BYTES,
      schema: {
        summary:
          "Submit a workflow: every job of the file is made at once (all or none, one commit); answers the workflow's id and its jobs' ids by name",
        consumes: ["application/json", "application/yaml", "multipart/form-data"],
        querystring: workflowSubmitQuery,
        body: workflowSubmitBody,
        response: {
          200: json(
            checkedWorkflowFileSchema,
            "a dry run: the workflow file is valid, and this is how it reads",
          ),
          201: json(workflowCreatedSchema, "accepted and durable: every job of the workflow"),
          ...errors(400, 401, 403, 413, 429, 507),
        },
      },
    },
    async (request, reply) => {
      // A dry run makes nothing (no job, no blob, no rate): workflow-dry-run.ts.
      if (request.query.dryRun) return dryRunWorkflow(request, ports, request.query.explain);
      const principal = request.principal ?? START_ADMIN;
      const refusal =
        principal.role === "admin" ? null : submitRefusal(submitLimiter, principal, monotonicMs());
      if (refusal) return reply.code(429).header("retry-after", refusal.retryAfter).send(refusal.answer);
      const owner = ownerOf(request);
      // A submit repeated with its key answers the workflow the first one made.
      const key = submitKeyOf(request);
      // Every job's QoS tier is checked against the submitter's token, as at a job's submit.
      const { allowedQos } = submitterOf(request);
      const workflow = request.isMultipart()
        ? await submitMultipart(request, { ports, files, maxUploadBytes }, owner, key, allowedQos)
        : await ports.workflows.submit(
            owner,
            key,
            async (assign) => {
              const file = validateWorkflowFile(request.body);
              // URL inputs are fetched by the agents: only paths need a multipart submit.
              const named = file.jobs.find((job) => uploadedInputs(job.spec.inputs).length > 0);
              if (named) {
                const index = named.spec.inputs.findIndex((input) => !isUrlInput(input));
                throw new InvalidRequestError(
                  `jobs.${named.name}.inputs[${index}]`,
                  `${named.spec.inputs[index]}: file was not uploaded (send the workflow as multipart/form-data with its input files)`,
                );
              }
              return { file, ids: await assign(file), inputs: new Map() };
            },
            allowedQos,
          );
      reply.code(201);
      return createdView(workflow);
    },
  );

  api.get(
    "/api/v1/workflows",
    {
      schema: {
        summary:
          "List workflows in id order: those with a job not ended, unless all=1 (a workflow whose jobs were all removed is not listed); a user lists their own",
        querystring: workflowListQuery,
        response: { 200: json(z.array(workflowSummarySchema), "the workflows"), ...errors(400, 401) },
      },
    },
    async (request) => {
      const { all } = request.query;
      // A user lists their own workflows only, whatever `user` says; admins and readers whoever they ask.
      const principal = request.principal;
      const user = principal && !seesAllJobs(principal.role) ? principal.user : request.query.user;
      return ports.read
        .listWorkflows()
        .filter((workflow) => user === undefined || workflow.owner === user)
        .sort((a, b) => workflowNumber(a.id) - workflowNumber(b.id))
        .map((workflow) => summaryView(workflow, ports))
        .filter((workflow): workflow is WorkflowSummary => workflow !== null)
        .filter((workflow) => all || !isEndedState(workflow.state));
    },
  );

  api.get(
    "/api/v1/workflows/:id",
    {
      schema: {
        summary:
          "One workflow: its jobs by name, and its graph (each job after those it waits for) with each job's state",
        params: workflowParams,
        response: { 200: json(workflowSchema, "the workflow"), ...errors(400, 401, 404) },
      },
    },
    async (request) => workflowView(visibleWorkflow(request, ports, request.params.id), ports),
  );

  api.post(
    "/api/v1/workflows/:id/retry",
    {
      schema: {
        summary:
          "Rerun what failed (DAGMan's rescue): every failed or cancelled job of the workflow gets its failed and cancelled tasks retried, in one commit; the jobs waiting on them wait again; what succeeded is kept",
        params: workflowParams,
        response: {
          200: json(workflowRetrySchema, "the jobs retried (durable)"),
          ...errors(400, 401, 403, 404, 409, 429),
        },
      },
    },
    async (request) => {
      const workflow = visibleWorkflow(request, ports, request.params.id);
      const outcome = await ports.workflows.retry(
        workflow.id,
        actorOf(request),
        submitterOf(request).allowedQos,
      );
      return {
        workflow: workflow.id,
        retried: outcome.retried,
      };
    },
  );

  const controls: [action: "cancel" | "hold" | "release", summary: string][] = [
    [
      "cancel",
      "Cancel every job of the workflow that has not ended, in one commit (dependants first); what has ended is left as it is",
    ],
    ["hold", "Hold every job of the workflow that has not ended, in one commit"],
    ["release", "Release every held job of the workflow, in one commit"],
  ];
  for (const [action, summary] of controls)
    api.post(
      `/api/v1/workflows/:id/${action}`,
      {
        schema: {
          summary,
          params: workflowParams,
          response: {
            200: json(workflowJobsSchema, "the jobs acted on, each with its state after (durable)"),
            ...errors(400, 401, 403, 404, 409),
          },
        },
      },
      async (request) => {
        const workflow = visibleWorkflow(request, ports, request.params.id);
        return touchedView(await ports.workflows[action](workflow.id, actorOf(request)), ports);
      },
    );

  api.delete(
    "/api/v1/workflows/:id",
    {
      schema: {
        summary:
          "Remove every job of the workflow, all ended, with their files and checkpoints, in one commit; 409 naming a job that has not ended (nothing removed)",
        params: workflowParams,
        response: {
          200: json(workflowJobsSchema, "the jobs removed (durable)"),
          ...errors(401, 403, 404, 409),
        },
      },
    },
    async (request) => {
      const workflow = visibleWorkflow(request, ports, request.params.id);
      const removed = await ports.workflows.remove(workflow.id);
      for (const member of removed.jobs) await files.deleteJobFiles(member.job);
      return touchedView(removed, ports);
    },
  );
}

/** A cancel's, hold's, release's or remove's answer: the workflow's state and each job's after. */
function touchedView({ workflow, jobs }: WorkflowJobsTouched, ports: ApiPorts): WorkflowJobs {
  const states = workflow.jobs.map((member) => ports.read.header(member.job)?.state);
  const remaining = states.filter((state) => state !== undefined);
  return {
    workflow: workflow.id,
    state: remaining.length === 0 ? null : workflowState(states),
    jobs: jobs.map((member) => ({
      name: member.name,
      job: member.job,
      state: ports.read.header(member.job)?.state ?? null,
    })),
  };
}

/**
 * Multipart: a field `workflow` (the file as JSON or YAML) first, then one file part per input,
 * named `NAME/PATH`. The ids are handed out once the file is checked, and each input is stored
 * under its job's id; a refusal deletes what was stored.
 */
async function submitMultipart(
  request: FastifyRequest,
  { ports, files, maxUploadBytes }: { ports: ApiPorts; files: JobFiles; maxUploadBytes: number },
  owner: string,
  key: string | null,
  allowedQos: readonly string[] | null,
) {
  let ids: WorkflowIds | null = null;
  let received = false;
  /** The jobs with an input stored: what a refusal deletes. */
  const touched = new Set<string>();
  try {
    const workflow = await ports.workflows.submit(
      owner,
      key,
      async (assign) => {
        received = true;
        let file: WorkflowFile | null = null;
        // Each job's inputs stored, by name, with the SHA-256 their store computed.
        const stored = new Map<string, Map<string, string>>();
        for await (const part of multipartParts(request)) {
          if (part.type === "field") {
            if (part.fieldname !== "workflow") continue;
            file = validateWorkflowFile(fileFieldData(request, part));
            ids = await assign(file);
            continue;
          }
          if (!file || !ids) {
            part.file.resume();
            throw new InvalidRequestError("workflow", "the workflow field must come before the input files");
          }
          const slash = part.fieldname.indexOf("/");
          const name = slash < 0 ? "" : part.fieldname.slice(0, slash);
          const path = part.fieldname.slice(slash + 1);
          const job = file.jobs.find((each) => each.name === name);
          const id = ids.jobs.get(name);
          if (!job || id === undefined || !uploadedInputs(job.spec.inputs).includes(path)) {
            part.file.resume();
            throw new InvalidRequestError(
              "inputs",
              `${part.fieldname} was uploaded but is not an input of a job of the workflow (parts are named NAME/PATH)`,
            );
          }
          touched.add(id);
          const limits = { maxUploadBytes, what: `input ${path}`, shown: `input ${part.fieldname}` };
          const paths = stored.get(name) ?? new Map<string, string>();
          stored.set(name, paths);
          await storeUpload(part.file, limits, async (content) => {
            paths.set(path, (await files.storeInput(id, path, content)).sha256);
          });
        }
        if (!file || !ids) throw new InvalidRequestError("workflow", "the workflow field is missing");
        const inputs = new Map<string, string[]>();
        const inputDigests = new Map<string, Record<string, string>>();
        const jobs: WorkflowFile["jobs"] = [];
        for (const job of file.jobs) {
          const missing = job.spec.inputs.findIndex(
            (input) => !isUrlInput(input) && !stored.get(job.name)?.has(input),
          );
          if (missing >= 0)
            throw new InvalidRequestError(
              `jobs.${job.name}.inputs[${missing}]`,
              `${job.spec.inputs[missing]}: file was not uploaded`,
            );
          const paths = uploadedInputs(job.spec.inputs);
          inputs.set(job.name, paths);
          const digests = stored.get(job.name);
          inputDigests.set(job.name, Object.fromEntries(paths.map((path) => [path, digests!.get(path)!])));
          // An array's parameters file is read now, as at a job's submit.
          const id = ids.jobs.get(job.name)!;
          jobs.push({ ...job, spec: await withParamsFile(job.spec, files, id, `jobs.${job.name}.`) });
        }
        return { file: { ...file, jobs }, ids, inputs, inputDigests };
      },
      allowedQos,
    );
    if (!received) await readPastParts(request);
    return workflow;
  } catch (error) {
    for (const id of touched) await files.deleteJobFiles(id);
    throw error;
  }
}
