// Files agents move: inputs down, outputs up. Join-token auth; outputs only for the current attempt.

import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { BlobStore } from "../../store/blobs.ts";
import { inputKey, outputKey } from "../blob-keys.ts";
import { ConflictError, type Core, NotFoundError } from "../core.ts";

export function registerAgentFileRoutes(app: FastifyInstance, core: Core, blobs: BlobStore): void {
  app.get("/api/v1/agent/jobs/:id/inputs/*", async (request, reply) => {
    const { id, "*": path } = request.params as { id: string; "*": string };
    const job = core.job(id);
    if (!job.record.inputs.includes(path)) throw new NotFoundError(`job ${id} has no input ${path}`);
    const key = inputKey(id, path);
    const info = await blobs.stat(key);
    if (!info) throw new NotFoundError(`input ${path} of job ${id} is missing from the blob store`);
    reply.header("content-type", "application/octet-stream");
    reply.header("content-length", info.bytes);
    return blobs.read(key);
  });

  app.put("/api/v1/agent/jobs/:id/tasks/:task/attempts/:attempt/outputs/*", async (request) => {
    const params = request.params as { id: string; task: string; attempt: string; "*": string };
    const task = Number(params.task);
    const attempt = Number(params.attempt);
    const job = core.job(params.id);
    if (!job.record.spec.outputs.includes(params["*"])) {
      throw new NotFoundError(`job ${params.id} declares no output ${params["*"]}`);
    }
    if (!core.isCurrent(params.id, task, attempt)) {
      throw new ConflictError(`attempt ${attempt} of task ${task} is not current`);
    }
    // An empty upload comes without a body stream.
    const body = (request.body as Readable | undefined) ?? Readable.from([]);
    const info = await blobs.write(outputKey(params.id, task, attempt, params["*"]), body);
    return { bytes: info.bytes };
  });
}
