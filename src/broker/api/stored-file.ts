// A job's stored file as a request's answer (an output, an input or a checkpoint object): its
// bytes, with their type and length; a 404 naming what is missing when there is none.

import type { Readable } from "node:stream";
import type { FastifyReply } from "fastify";
import { NotFoundError } from "../reactor/errors.ts";
import type { StoredFile } from "./ports.ts";

export async function sendStoredFile(
  reply: FastifyReply,
  file: StoredFile,
  missing: string,
): Promise<Readable> {
  const bytes = await file.size();
  if (bytes === null) throw new NotFoundError(missing);
  reply.header("content-type", "application/octet-stream");
  reply.header("content-length", bytes);
  return file.read();
}
