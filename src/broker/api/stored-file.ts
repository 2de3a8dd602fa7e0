// A job's stored file as a request's answer (an output, an input or a checkpoint object): its
// bytes, with their type and length (for a HEAD, those alone); a 404 naming what is missing when
// there is none.

import { Readable } from "node:stream";
import type { FastifyReply } from "fastify";
import { NotFoundError } from "../reactor/errors.ts";
import type { StoredFile } from "./ports.ts";

export async function sendStoredFile(
  reply: FastifyReply,
  file: StoredFile,
  missing: string,
  headOnly = false,
): Promise<Readable> {
  const bytes = await file.size();
  if (bytes === null) throw new NotFoundError(missing);
  reply.header("content-type", "application/octet-stream");
  reply.header("content-length", bytes);
  // A HEAD's answer has the headers alone: the file is not opened (fastify would read a stream
  // through to its end).
  return headOnly ? Readable.from([]) : file.read();
}
