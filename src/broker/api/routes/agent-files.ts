// Files agents move: inputs down, outputs up, checkpoints both ways. Each request is bound to the
// host whose credential it carries: a host reads the inputs and checkpoint of the live attempts
// placed on it, and writes outputs and checkpoints of its own attempts only (its own ranks of a
// multi-node one); only the current attempt may upload. Anything else (another host's attempt, an
// absent one, a join token, which may only join) answers the same 404, so a host learns nothing
// of the work of others, not even whether it exists. The routes move the bytes; what a checkpoint
// commit means (its generation, a gang's completeness, what is dropped) the reactor decides
// (reactor/handlers/checkpoints.ts).

import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { bytesWrittenSchema, checkpointCommittedSchema, fileBytes } from "../../../common/api/agent-files.ts";
import { binary } from "../../../common/api/bytes-answer.ts";
import { errors } from "../../../common/api/errors.ts";
import { json } from "../../../common/api/json-answer.ts";
import { nodesOf } from "../../../common/model/job-spec.ts";
import { storedOutputs } from "../../../common/model/output-spec.ts";
import {
  checkpointManifest,
  INPUT_DIGEST_HEADER,
  readCheckpointManifest,
} from "../../../common/protocol/messages.ts";
import { ConflictError, InvalidRequestError, NotFoundError } from "../../reactor/errors.ts";
import { digestEtag } from "../byte-range.ts";
import type { ApiPorts, JobFiles } from "../ports.ts";
import { attemptParams, filePath, jobParams, sha256, taskParams, wholeNumber } from "../requests.ts";
import { sendStoredFile } from "../stored-file.ts";
import { limitUpload } from "../upload-limit.ts";

/** The one answer to a request for files the calling host has no attempt of (see the head of this file). */
export const NOT_ON_THIS_HOST = "no such attempt on this host";

/** The ranks the caller runs of the job's (task's) live attempts: what it may read; none is a 404. */
function readableRanks(
  ports: ApiPorts,
  request: FastifyRequest,
  jobId: string,
  taskIndex?: number,
): number[] {
  const host = request.agentHost;
  const ranks = host === null ? [] : ports.read.liveRanksOn(host, jobId, taskIndex);
  if (ranks.length === 0) throw new NotFoundError(NOT_ON_THIS_HOST);
  return ranks;
}

/**
 * The ranks the caller runs of one attempt (live or not: its own ended attempt hears 409 from the
 * fencing after this); none is a 404, and the body of the refused upload is let go.
 */
function writableRanks(
  ports: ApiPorts,
  request: FastifyRequest,
  at: { id: string; task: number; attempt: number },
  body?: Readable | null,
): number[] {
  const host = request.agentHost;
  const ranks = host === null ? [] : ports.read.ranksOn(host, at.id, at.task, at.attempt);
  if (ranks.length === 0) {
    body?.resume();
    throw new NotFoundError(NOT_ON_THIS_HOST);
  }
  return ranks;
}

export function registerAgentFileRoutes(
  app: FastifyInstance,
  ports: ApiPorts,
  files: JobFiles,
  maxUploadBytes: number,
): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get(
    "/api/v1/agent/jobs/:id/inputs/*",
    {
      schema: {
        summary: `An input file of a job, for the agent that stages it (its SHA-256 in ${INPUT_DIGEST_HEADER}); a single byte Range (with If-Range: its ETag) answers that part`,
        params: jobParams.extend({ "*": filePath }),
        response: {
          200: binary("the file's bytes"),
          206: binary("the part of the file the Range asked for (Content-Range says which)"),
          ...errors(400, 401, 404, 416),
        },
      },
    },
    async (request, reply) => {
      const { id, "*": path } = request.params;
      readableRanks(ports, request, id);
      const job = ports.read.job(id);
      if (!job.record.inputs.includes(path)) throw new NotFoundError(`job ${id} has no input ${path}`);
      const missing = `input ${path} of job ${id} is missing from the blob store`;
      // Its digest, by which the agent caches it: a HEAD asks for that alone (it opens no stream).
      // It is the file's entity tag too, to which a resumed download ties its Range (If-Range).
      const digest = await files.inputDigest(id, path);
      if (digest !== null) reply.header(INPUT_DIGEST_HEADER, digest);
      const ifRange = request.headers["if-range"];
      return sendStoredFile(reply, files.input(id, path), missing, request.method === "HEAD", {
        request: { range: request.headers.range, ifRange: Array.isArray(ifRange) ? ifRange[0] : ifRange },
        etag: digest === null ? null : digestEtag(digest),
      });
    },
  );

  api.put(
    "/api/v1/agent/jobs/:id/tasks/:task/attempts/:attempt/outputs/*",
    {
      schema: {
        summary: "Upload an output file of a live attempt",
        consumes: ["application/octet-stream"],
        params: attemptParams.extend({ "*": filePath }),
        body: fileBytes.nullish(),
        response: { 200: json(bytesWrittenSchema, "stored: its size"), ...errors(400, 401, 404, 409, 507) },
      },
    },
    async (request) => {
      const { id, task, attempt, "*": path } = request.params;
      const ranks = writableRanks(ports, request, { id, task, attempt }, request.body);
      const job = ports.read.job(id);
      // With `outputsFrom: all`, each rank's outputs come under rank-R/.
      const spec = job.record.spec;
      const rankOutput = /^rank-(\d+)\/(.+)$/.exec(path);
      const all = spec.outputsFrom === "all" && rankOutput !== null;
      const declared = all
        ? Number(rankOutput[1]) < nodesOf(spec) && storedOutputs(spec.outputs).includes(rankOutput[2])
        : storedOutputs(spec.outputs).includes(path);
      if (!declared) {
        request.body?.resume();
        throw new NotFoundError(`job ${id} declares no output ${path}`);
      }
      // A rank's outputs come from its own host; the job's plain outputs from rank 0's.
      if (!ranks.includes(all ? Number(rankOutput[1]) : 0)) {
        request.body?.resume();
        throw new NotFoundError(NOT_ON_THIS_HOST);
      }
      if (!ports.read.acceptsOutputs(id, task, attempt)) {
        request.body?.resume();
        throw new ConflictError(
          `attempt ${attempt} of task ${task} is not current, or another gave the result`,
        );
      }
      // An empty upload comes without a body stream.
      const body = limitUpload(request.body ?? Readable.from([]), maxUploadBytes, `output ${path}`);
      return { bytes: await files.storeOutput(id, task, attempt, path, body) };
    },
  );

  // ---- checkpoints: objects named by their SHA-256 first, then a manifest that names them all.

  api.get(
    "/api/v1/agent/jobs/:id/tasks/:task/checkpoint",
    {
      schema: {
        summary: "The task's last committed checkpoint manifest (a multi-node job's: that rank's)",
        params: taskParams,
        querystring: z.object({
          rank: wholeNumber().optional().meta({ description: "a multi-node job's rank" }),
        }),
        response: { 200: json(checkpointManifest, "the files of the checkpoint"), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const { id, task } = request.params;
      const { rank } = request.query;
      const ranks = readableRanks(ports, request, id, task);
      // A gang's rank reads its own state: another rank's is another host's.
      if (rank !== undefined && !ranks.includes(rank)) throw new NotFoundError(NOT_ON_THIS_HOST);
      const record = ports.read.job(id).tasks[task];
      if (!record) throw new NotFoundError(`job ${id} has no task ${task}`);
      if (!record.checkpoint) throw new NotFoundError(`task ${task} of job ${id} has no checkpoint`);
      // A gang's rank gets its own state of the newest complete generation.
      const manifest = ports.read.restartManifest(id, task, rank);
      if (!manifest) {
        const whose = rank === undefined ? `task ${task} of job ${id}` : `rank ${rank}`;
        throw new NotFoundError(`${whose} has no checkpoint ${record.checkpoint.generation}`);
      }
      // Checked again as it is read: a store written before paths were checked, or tampered with,
      // must not hand an agent a path out of its folder (a 500: the server's own record is at fault).
      return readCheckpointManifest(manifest);
    },
  );

  api.get(
    "/api/v1/agent/jobs/:id/tasks/:task/checkpoint/objects/:sha",
    {
      schema: {
        summary: "One object of the task's checkpoint",
        params: taskParams.extend({ sha: sha256 }),
        response: { 200: binary("the object's bytes"), ...errors(400, 401, 404) },
      },
    },
    async (request, reply) => {
      const { id, task, sha } = request.params;
      readableRanks(ports, request, id, task);
      return sendStoredFile(reply, files.checkpointObject(id, task, sha), `no checkpoint object ${sha}`);
    },
  );

  api.put(
    "/api/v1/agent/jobs/:id/tasks/:task/attempts/:attempt/checkpoint/objects/:sha",
    {
      schema: {
        summary: "Upload one checkpoint object, named by the SHA-256 of its content",
        consumes: ["application/octet-stream"],
        params: attemptParams.extend({ sha: sha256 }),
        body: fileBytes.nullish(),
        response: { 200: json(bytesWrittenSchema, "stored: its size"), ...errors(400, 401, 404, 409, 507) },
      },
    },
    async (request) => {
      const { id, task, attempt, sha } = request.params;
      const ranks = writableRanks(ports, request, { id, task, attempt }, request.body);
      const body = request.body ?? Readable.from([]);
      if (!ports.read.isCurrent(id, task, attempt)) {
        body.resume();
        throw new ConflictError(`attempt ${attempt} of task ${task} is not current`);
      }
      // From the request's arrival to the last byte stored: the transfer rate moves are priced with.
      const startedAt = performance.now();
      const hash = createHash("sha256");
      const hashed = limitUpload(body, maxUploadBytes, "a checkpoint file", (chunk) => hash.update(chunk));
      const bytes = await files.storeCheckpointObject(id, task, sha, hashed);
      if (hash.digest("hex") !== sha) {
        await files.deleteCheckpointObject(id, task, sha);
        throw new InvalidRequestError("sha256", "the object's content does not match its name");
      }
      ports.checkpoints.noteTransfer(bytes, performance.now() - startedAt);
      await ports.checkpoints.objectStored({ jobId: id, taskIndex: task, ranks, sha256: sha, bytes });
      return { bytes };
    },
  );

  api.post(
    "/api/v1/agent/jobs/:id/tasks/:task/attempts/:attempt/checkpoint",
    {
      schema: {
        summary: "Commit a checkpoint whose objects are all uploaded: it becomes the task's restart point",
        params: attemptParams,
        body: checkpointManifest,
        response: {
          200: json(checkpointCommittedSchema, "committed: its generation, and the one it replaces"),
          ...errors(400, 401, 404, 409, 507),
        },
      },
    },
    async (request) => {
      const { id, task, attempt } = request.params;
      const manifest = request.body;
      const own = writableRanks(ports, request, { id, task, attempt });
      if (!ports.read.isCurrent(id, task, attempt)) {
        throw new ConflictError(`attempt ${attempt} of task ${task} is not current: checkpoint ignored`);
      }
      // A gang's rank commits its own state: another rank's is another host's to give.
      if (manifest.gang && !own.includes(manifest.gang.rank)) throw new NotFoundError(NOT_ON_THIS_HOST);
      // Objects stored before this server knew of them (through the previous leader, or before a
      // restart: what it knows of uploads not yet committed lives in memory) are looked up once.
      const shas = [...new Set(manifest.files.map((file) => file.sha256))];
      for (const sha of ports.read.unknownCheckpointObjects(id, task, shas)) {
        const bytes = await files.checkpointObject(id, task, sha).size();
        if (bytes !== null) {
          const stored = { jobId: id, taskIndex: task, ranks: own, sha256: sha, bytes };
          await ports.checkpoints.objectStored(stored);
        }
      }
      // Which generation this makes, whether a gang's is complete and what is dropped: the reactor's.
      return ports.checkpoints.commit({ jobId: id, taskIndex: task, attempt, manifest });
    },
  );
}
