// /api/v1/jobs: submit, list, show, control, remove, logs, outputs.

import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type JobSpec, validateJobSpec } from "../../model/jobfile.ts";
import { isEndedState, JOB_STATES } from "../../model/states.ts";
import type { BlobStore } from "../../store/blobs.ts";
import type { Store } from "../../store/store.ts";
import { inputKey, jobPrefix, logKey, outputKey, outputPrefix } from "../blob-keys.ts";
import { type Core, InvalidRequestError, NotFoundError } from "../core.ts";
import type { JobEntry } from "../job-entry.ts";
import { jobSummaryView, jobView } from "../views.ts";

export interface JobRouteDeps {
  core: Core;
  store: Store;
  blobs: BlobStore;
}

const LOG_POLL_MS = 250;

export function registerJobRoutes(app: FastifyInstance, { core, store, blobs }: JobRouteDeps): void {
  app.post("/api/v1/jobs", async (request, reply) => {
    const owner = ownerOf(request);
    const job = request.isMultipart()
      ? await submitMultipart(request, core, blobs, owner)
      : await submitJson(request.body, core, owner);
    const events = await store.events(job.id);
    reply.code(201);
    return jobView(job, events, job.tasks.length === 1);
  });

  app.get("/api/v1/jobs", async (request) => {
    const query = request.query as { all?: string; state?: string };
    const all = query.all === "1" || query.all === "true";
    const state = query.state;
    if (state && !(JOB_STATES as readonly string[]).includes(state)) {
      throw new InvalidRequestError("state", `unknown state ${state}; one of ${JOB_STATES.join(", ")}`);
    }
    return core
      .listJobs()
      .filter((job) => (state ? job.record.state === state : all || !isEndedState(job.record.state)))
      .map(jobSummaryView);
  });

  app.get("/api/v1/jobs/:id", async (request) => {
    const { id } = request.params as { id: string };
    const query = request.query as { tasks?: string; events?: string };
    const job = core.job(id);
    const events = query.events === "0" ? null : await store.events(id);
    return jobView(job, events, query.tasks !== "0");
  });

  app.delete("/api/v1/jobs/:id", async (request) => {
    const { id } = request.params as { id: string };
    await core.remove(id);
    await blobs.deletePrefix(jobPrefix(id));
    return { id, removed: true };
  });

  app.post("/api/v1/jobs/:id/:action", async (request) => {
    const { id, action } = request.params as { id: string; action: string };
    const body = (request.body ?? {}) as { to?: string };
    let job: JobEntry;
    switch (action) {
      case "cancel":
        job = await core.cancel(id);
        break;
      case "hold":
        job = await core.hold(id);
        break;
      case "release":
        job = await core.release(id);
        break;
      case "migrate":
        job = await core.migrate(id, body.to ?? null);
        break;
      default:
        throw new NotFoundError(`no action ${action}; one of cancel, hold, release, migrate`);
    }
    return jobView(job, await store.events(id), false);
  });

  app.get("/api/v1/jobs/:id/logs", async (request, reply) => {
    const { id } = request.params as { id: string };
    const query = request.query as { task?: string; stream?: string; follow?: string; attempt?: string };
    const job = core.job(id);
    const taskIndex = parseIndex(query.task ?? "0", "task");
    if (taskIndex >= job.tasks.length) throw new NotFoundError(`job ${id} has no task ${taskIndex}`);
    const stream = query.stream === "stderr" ? "stderr" : "stdout";
    const follow = query.follow === "1" || query.follow === "true";
    const wanted = query.attempt ? parseIndex(query.attempt, "attempt") : null;
    reply.header("content-type", "text/plain; charset=utf-8");
    return Readable.from(followLog(core, blobs, job, taskIndex, stream, follow, wanted, request));
  });

  app.get("/api/v1/jobs/:id/outputs", async (request) => {
    const { id } = request.params as { id: string };
    const job = core.job(id);
    const files: { task: number; attempt: number; path: string; bytes: number }[] = [];
    for (const task of job.tasks) {
      if (task.resultAttempt === null) continue;
      const prefix = outputPrefix(id, task.index, task.resultAttempt);
      for (const blob of await blobs.list(prefix)) {
        files.push({
          task: task.index,
          attempt: task.resultAttempt,
          path: blob.key.slice(prefix.length + 1),
          bytes: blob.bytes,
        });
      }
    }
    return files;
  });

  app.get("/api/v1/jobs/:id/outputs/:task/*", async (request, reply) => {
    const { id, task, "*": path } = request.params as { id: string; task: string; "*": string };
    const job = core.job(id);
    const index = parseIndex(task, "task");
    const record = job.tasks[index];
    if (!record || record.resultAttempt === null)
      throw new NotFoundError(`task ${index} of job ${id} has no result`);
    const key = outputKey(id, index, record.resultAttempt, path);
    const info = await blobs.stat(key);
    if (!info) throw new NotFoundError(`no output ${path} in task ${index} of job ${id}`);
    reply.header("content-type", "application/octet-stream");
    reply.header("content-length", info.bytes);
    return blobs.read(key);
  });
}

function ownerOf(request: FastifyRequest): string {
  const header = request.headers["x-steward-user"];
  const user = Array.isArray(header) ? header[0] : header;
  return user && /^[\w.@-]{1,64}$/.test(user) ? user : "admin";
}

function checkSupported(spec: JobSpec): void {
  if (spec.replicas > 1)
    throw new InvalidRequestError("replicas", "more than one replica is not supported yet");
}

async function submitJson(body: unknown, core: Core, owner: string): Promise<JobEntry> {
  const spec = validateJobSpec(body);
  checkSupported(spec);
  if (spec.inputs.length > 0) {
    throw new InvalidRequestError(
      "inputs[0]",
      `${spec.inputs[0]}: file was not uploaded (send the job as multipart/form-data with its input files)`,
    );
  }
  return core.submit(spec, owner, []);
}

/** Multipart: a field `job` (the job file as JSON) first, then one file part per input, named by its path. */
async function submitMultipart(request: FastifyRequest, core: Core, blobs: BlobStore, owner: string) {
  let spec: JobSpec | null = null;
  let id: string | null = null;
  const received = new Set<string>();
  try {
    for await (const part of request.parts()) {
      if (part.type === "field") {
        if (part.fieldname !== "job") continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(String(part.value));
        } catch {
          throw new InvalidRequestError("job", "the job field is not JSON");
        }
        spec = validateJobSpec(parsed);
        checkSupported(spec);
        id = core.allocateJobId();
        continue;
      }
      if (!spec || !id) {
        part.file.resume();
        throw new InvalidRequestError("job", "the job field must come before the input files");
      }
      const path = part.fieldname;
      if (!spec.inputs.includes(path)) {
        part.file.resume();
        throw new InvalidRequestError("inputs", `${path} was uploaded but is not one of the job's inputs`);
      }
      await blobs.write(inputKey(id, path), part.file);
      received.add(path);
    }
    if (!spec || !id) throw new InvalidRequestError("job", "the job field is missing");
    const missing = spec.inputs.findIndex((path) => !received.has(path));
    if (missing >= 0) {
      throw new InvalidRequestError(`inputs[${missing}]`, `${spec.inputs[missing]}: file was not uploaded`);
    }
    return await core.submit(spec, owner, [...spec.inputs], id);
  } catch (error) {
    if (id) await blobs.deletePrefix(jobPrefix(id));
    throw error;
  }
}

function parseIndex(value: string, field: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0)
    throw new InvalidRequestError(field, `not a valid index: ${value}`);
  return number;
}

/** The log of the task's latest attempt (or a given one); with follow, until that attempt ends. */
async function* followLog(
  core: Core,
  blobs: BlobStore,
  job: JobEntry,
  taskIndex: number,
  stream: "stdout" | "stderr",
  follow: boolean,
  wanted: number | null,
  request: FastifyRequest,
): AsyncGenerator<Buffer> {
  let offset = 0;
  let closed = false;
  request.raw.on("close", () => {
    closed = true;
  });
  for (;;) {
    const attempt = wanted === null ? job.latestAttempt(taskIndex) : job.attempt(taskIndex, wanted);
    if (!attempt) {
      if (!follow || closed || core.job(job.id).tasks[taskIndex].state !== "pending") return;
      await sleep(LOG_POLL_MS);
      continue;
    }
    const ended = attempt.state === "ended";
    const key = logKey(job.id, taskIndex, attempt.number, stream);
    const info = await blobs.stat(key);
    if (info && info.bytes > offset) {
      for await (const chunk of blobs.read(key, offset)) {
        offset += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
    }
    // The agent sends the last bytes before it reports the end, so once ended the log is complete.
    if (!follow || closed || ended) return;
    await sleep(LOG_POLL_MS);
  }
}
