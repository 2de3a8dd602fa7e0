// The OpenAPI document at /api/v1/openapi.json. The job file schema comes from the same zod
// schema that validates submissions, so the two cannot drift apart.

import { z } from "zod";
import { jobSpecSchema } from "../model/jobfile.ts";

interface Operation {
  method: "get" | "post" | "put" | "delete";
  path: string;
  summary: string;
  body?: "job" | "control";
}

const OPERATIONS: Operation[] = [
  {
    method: "post",
    path: "/api/v1/jobs",
    summary: "Submit a job (JSON, or multipart with a `job` field and one file part per input)",
    body: "job",
  },
  {
    method: "get",
    path: "/api/v1/jobs",
    summary: "List jobs (?all=1 includes ended jobs, ?state=S filters)",
  },
  {
    method: "get",
    path: "/api/v1/jobs/{id}",
    summary: "One job with its tasks, attempts and events (?tasks=0 leaves tasks out)",
  },
  { method: "delete", path: "/api/v1/jobs/{id}", summary: "Remove an ended job with its files" },
  { method: "post", path: "/api/v1/jobs/{id}/cancel", summary: "Cancel a job" },
  { method: "post", path: "/api/v1/jobs/{id}/hold", summary: "Hold a job (running attempts stop)" },
  { method: "post", path: "/api/v1/jobs/{id}/release", summary: "Release a held job" },
  {
    method: "post",
    path: "/api/v1/jobs/{id}/migrate",
    summary: "Move a running job to another host",
    body: "control",
  },
  {
    method: "get",
    path: "/api/v1/jobs/{id}/logs",
    summary: "stdout or stderr of a task's latest attempt (?task=N&stream=stderr&follow=1)",
  },
  { method: "get", path: "/api/v1/jobs/{id}/outputs", summary: "The committed output files of each task" },
  { method: "get", path: "/api/v1/jobs/{id}/outputs/{task}/{path}", summary: "One output file" },
  { method: "get", path: "/api/v1/jobs/{id}/explain", summary: "Why a job is not running, host by host" },
  { method: "get", path: "/api/v1/hosts", summary: "Hosts with their facts and state" },
  {
    method: "post",
    path: "/api/v1/hosts/{name}/drain",
    summary: "Let a host finish its work and take no more",
  },
  { method: "get", path: "/api/v1/events", summary: "Job events as server-sent events (?job=ID)" },
];

let cached: object | null = null;

export function openApiDocument(): object {
  if (cached) return cached;
  const paths: Record<string, Record<string, object>> = {};
  for (const operation of OPERATIONS) {
    const parameters = [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => ({
      name: match[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    const entry: Record<string, unknown> = {
      summary: operation.summary,
      parameters,
      security: [{ bearer: [] }],
      responses: { "200": { description: "OK" }, "400": { description: "Bad request, naming the field" } },
    };
    if (operation.body === "job") {
      entry.requestBody = {
        content: { "application/json": { schema: { $ref: "#/components/schemas/JobFile" } } },
      };
    }
    if (operation.body === "control") {
      entry.requestBody = {
        content: {
          "application/json": { schema: { type: "object", properties: { to: { type: "string" } } } },
        },
      };
    }
    paths[operation.path] ??= {};
    paths[operation.path][operation.method] = entry;
  }
  cached = {
    openapi: "3.1.0",
    info: { title: "Steward", version: "1" },
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: { JobFile: z.toJSONSchema(jobSpecSchema, { io: "input", unrepresentable: "any" }) },
    },
  };
  return cached;
}
