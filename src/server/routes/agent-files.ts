// Files agents move: inputs down, outputs up. Join-token auth; outputs only for the current attempt.

import { createHash } from "node:crypto";
import { Readable, Transform } from "node:stream";
import type { FastifyInstance } from "fastify";
import { checkpointManifest } from "../../protocol/messages.ts";
import type { BlobStore } from "../../store/blobs.ts";
import {
  checkpointManifestKey,
  checkpointObjectKey,
  checkpointPrefix,
  inputKey,
  outputKey,
} from "../blob-keys.ts";
import { ConflictError, type Core, InvalidRequestError, NotFoundError } from "../core.ts";

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

  // ---- checkpoints: objects named by their SHA-256 first, then a manifest that names them all.

  app.get("/api/v1/agent/jobs/:id/tasks/:task/checkpoint", async (request, reply) => {
    const { id, task } = request.params as { id: string; task: string };
    const record = core.job(id).tasks[Number(task)];
    if (!record) throw new NotFoundError(`job ${id} has no task ${task}`);
    if (!record.checkpoint) throw new NotFoundError(`task ${task} of job ${id} has no checkpoint`);
    reply.header("content-type", "application/json");
    return blobs.read(checkpointManifestKey(id, record.index, record.checkpoint.generation));
  });

  app.get("/api/v1/agent/jobs/:id/tasks/:task/checkpoint/objects/:sha", async (request, reply) => {
    const { id, task, sha } = request.params as { id: string; task: string; sha: string };
    core.job(id);
    const key = checkpointObjectKey(id, Number(task), checkSha(sha));
    const info = await blobs.stat(key);
    if (!info) throw new NotFoundError(`no checkpoint object ${sha}`);
    reply.header("content-type", "application/octet-stream");
    reply.header("content-length", info.bytes);
    return blobs.read(key);
  });

  app.put("/api/v1/agent/jobs/:id/tasks/:task/attempts/:attempt/checkpoint/objects/:sha", async (request) => {
    const params = request.params as { id: string; task: string; attempt: string; sha: string };
    const task = Number(params.task);
    const sha = checkSha(params.sha);
    const body = (request.body as Readable | undefined) ?? Readable.from([]);
    if (!core.isCurrent(params.id, task, Number(params.attempt))) {
      body.resume();
      throw new ConflictError(`attempt ${params.attempt} of task ${task} is not current`);
    }
    const key = checkpointObjectKey(params.id, task, sha);
    const hash = createHash("sha256");
    const hashed = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    body.on("error", (error) => hashed.destroy(error));
    body.pipe(hashed);
    const info = await blobs.write(key, hashed);
    if (hash.digest("hex") !== sha) {
      await blobs.deletePrefix(key);
      throw new InvalidRequestError("sha256", "the object's content does not match its name");
    }
    return { bytes: info.bytes };
  });

  app.post("/api/v1/agent/jobs/:id/tasks/:task/attempts/:attempt/checkpoint", async (request) => {
    const params = request.params as { id: string; task: string; attempt: string };
    const task = Number(params.task);
    const attempt = Number(params.attempt);
    const manifest = checkpointManifest.parse(request.body);
    if (!core.isCurrent(params.id, task, attempt)) {
      throw new ConflictError(`attempt ${attempt} of task ${task} is not current: checkpoint ignored`);
    }
    let bytes = 0;
    for (const file of manifest.files) {
      const info = await blobs.stat(checkpointObjectKey(params.id, task, file.sha256));
      if (!info || info.bytes !== file.bytes) {
        throw new ConflictError(`checkpoint object for ${file.path} is missing: upload it first`);
      }
      bytes += file.bytes;
    }
    // The manifest is written before the commit that points at it: a restart never sees a part.
    const generation = core.nextCheckpointGeneration(params.id, task);
    await blobs.write(
      checkpointManifestKey(params.id, task, generation),
      Readable.from([JSON.stringify(manifest)]),
    );
    const previous = await core.commitCheckpoint(params.id, task, attempt, generation, bytes);
    await dropOldCheckpoints(
      blobs,
      params.id,
      task,
      generation,
      manifest.files.map((file) => file.sha256),
    );
    return { generation, bytes, previous };
  });
}

/** Keeps the last generation only: older manifests, and objects no longer named, go. */
async function dropOldCheckpoints(
  blobs: BlobStore,
  jobId: string,
  task: number,
  keep: number,
  shas: string[],
) {
  const prefix = checkpointPrefix(jobId, task);
  const named = new Set(shas.map((sha) => checkpointObjectKey(jobId, task, sha)));
  const current = checkpointManifestKey(jobId, task, keep);
  for (const blob of await blobs.list(`${prefix}/manifests`)) {
    if (blob.key !== current) await blobs.deletePrefix(blob.key);
  }
  for (const blob of await blobs.list(`${prefix}/objects`)) {
    if (!named.has(blob.key)) await blobs.deletePrefix(blob.key);
  }
}

function checkSha(sha: string): string {
  if (!/^[0-9a-f]{64}$/.test(sha)) throw new InvalidRequestError("sha256", "not a SHA-256 in hex");
  return sha;
}
