// A job's files: a task's log (stdout or stderr, followed while its attempt runs), the output files
// of each task's result, and one of them.

import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { binary } from "../../../../common/api/bytes-answer.ts";
import { errors } from "../../../../common/api/errors.ts";
import { outputFileSchema } from "../../../../common/api/jobs.ts";
import { json } from "../../../../common/api/json-answer.ts";
import { nodesOf } from "../../../../common/model/job-spec.ts";
import { NotFoundError } from "../../../reactor/errors.ts";
import type { TaskRead } from "../../../reactor/ports.ts";
import type { JobFiles } from "../../ports.ts";
import { filePath, flag, jobParams, taskParams, wholeNumber } from "../../requests.ts";
import { sendStoredFile } from "../../stored-file.ts";
import type { JobRouteDeps } from "./deps.ts";

const LOG_POLL_MS = 250;

const logQuery = z.object({
  task: wholeNumber().default(0).meta({ description: "task index" }),
  stream: z.enum(["stdout", "stderr"]).default("stdout"),
  follow: flag(false, "follow the attempt until it ends"),
  attempt: wholeNumber(1).optional().meta({ description: "this attempt instead of the latest" }),
  rank: wholeNumber().default(0).meta({ description: "a multi-node job's rank (0 by default)" }),
});

export function registerJobFileRoutes(app: FastifyInstance, { ports, files }: JobRouteDeps): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get(
    "/api/v1/jobs/:id/logs",
    {
      schema: {
        summary: "stdout or stderr of a task's latest attempt (or the one named), followed with follow=1",
        params: jobParams,
        querystring: logQuery,
        response: {
          200: binary("the log's bytes", "text/plain"),
          ...errors(400, 401, 404),
        },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { task, stream, follow, attempt, rank } = request.query;
      // The job's head and the task's own rows: an ended array is not read whole for one log.
      const { header, record } = await ports.read.readJobHead(id);
      if (task >= header.taskCount) throw new NotFoundError(`job ${id} has no task ${task}`);
      if (rank >= nodesOf(record.spec)) throw new NotFoundError(`job ${id} has no rank ${rank}`);
      reply.header("content-type", "text/plain; charset=utf-8");
      const read = () => ports.read.readTask(id, task);
      return Readable.from(
        followLog(files, id, read, { task, stream, rank }, follow, attempt ?? null, request),
      );
    },
  );

  api.get(
    "/api/v1/jobs/:id/outputs",
    {
      schema: {
        summary: "The committed output files of each task",
        params: jobParams,
        response: { 200: json(z.array(outputFileSchema), "the files, task by task"), ...errors(401, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const job = await ports.read.readJob(id);
      const listed: z.infer<typeof outputFileSchema>[] = [];
      for (const task of job.tasks) {
        if (task.resultAttempt === null) continue;
        for (const { path, bytes } of await files.outputs(id, task.index, task.resultAttempt))
          listed.push({ task: task.index, attempt: task.resultAttempt, path, bytes });
      }
      return listed;
    },
  );

  api.get(
    "/api/v1/jobs/:id/outputs/:task/*",
    {
      schema: {
        summary: "One output file of a task's result",
        params: taskParams.extend({ "*": filePath }),
        response: {
          200: binary("the file's bytes"),
          ...errors(400, 401, 404),
        },
      },
    },
    async (request, reply) => {
      const { id, task: index, "*": path } = request.params;
      const header = ports.read.header(id);
      if (!header) throw new NotFoundError(`no job ${id}`);
      // A job without that task: the same answer as a task without a result.
      const record = index < header.taskCount ? (await ports.read.readTask(id, index)).task : null;
      if (!record || record.resultAttempt === null)
        throw new NotFoundError(`task ${index} of job ${id} has no result`);
      const file = files.output(id, index, record.resultAttempt, path);
      return sendStoredFile(reply, file, `no output ${path} in task ${index} of job ${id}`);
    },
  );
}

/**
 * The log of the task's latest attempt (or a given one); with follow, that attempt until it ends
 * (not a later one: the client asks for the next attempt by its number).
 */
async function* followLog(
  files: JobFiles,
  jobId: string,
  readTask: () => Promise<TaskRead>,
  { task: taskIndex, stream, rank }: { task: number; stream: "stdout" | "stderr"; rank: number },
  follow: boolean,
  wanted: number | null,
  request: FastifyRequest,
): AsyncGenerator<Buffer> {
  let offset = 0;
  let closed = false;
  let pinned = wanted;
  request.raw.on("close", () => {
    closed = true;
  });
  for (;;) {
    const { task, attempts } = await readTask();
    const attempt =
      pinned === null ? attempts[attempts.length - 1] : attempts.find((each) => each.number === pinned);
    // Followed, the attempt first found is the one read to its end: a later one's bytes are not
    // read at this one's offset (a client follows the next attempt by its number).
    if (attempt) pinned = attempt.number;
    if (!attempt) {
      if (!follow || closed || task.state !== "pending") return;
      await sleep(LOG_POLL_MS);
      continue;
    }
    const ended = attempt.state === "ended";
    const log = files.log(jobId, taskIndex, attempt.number, stream, rank);
    const bytes = await log.size();
    if (bytes !== null && bytes > offset) {
      for await (const chunk of log.read(offset)) {
        offset += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
    }
    // The agent sends the last bytes before it reports the end, so once ended the log is complete.
    if (!follow || closed || ended) return;
    await sleep(LOG_POLL_MS);
  }
}
