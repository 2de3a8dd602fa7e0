// A job's stored file as a request's answer (an output, an input or a checkpoint object): its
// bytes, with their type and length (for a HEAD, those alone); a 404 naming what is missing when
// there is none. A route that offers ranges (an input's: an agent resumes a download cut halfway)
// answers a single byte range with its part (206), one past the end with a 416 (byte-range.ts).

import { Readable } from "node:stream";
import type { FastifyReply } from "fastify";
import { NotFoundError } from "../reactor/errors.ts";
import { type ByteRange, byteRange, contentRange, type RangeRequest } from "./byte-range.ts";
import type { StoredFile } from "./ports.ts";

/** A Range that starts past the file's end: a 416, whose Content-Range gives the file's size. */
export class RangeNotSatisfiableError extends Error {
  readonly size: number;
  constructor(size: number) {
    super(`the range asked for is not in the file, of ${size} bytes`);
    this.name = "RangeNotSatisfiableError";
    this.size = size;
  }
}

/** How a route offers ranges of the file: the request's Range and If-Range, the file's entity tag. */
export interface RangeOffer {
  request: RangeRequest;
  /** The file's strong entity tag (sent as ETag, matched by If-Range); null: it has none. */
  etag: string | null;
}

export async function sendStoredFile(
  reply: FastifyReply,
  file: StoredFile,
  missing: string,
  headOnly = false,
  ranges?: RangeOffer,
): Promise<Readable> {
  const bytes = await file.size();
  if (bytes === null) throw new NotFoundError(missing);
  reply.header("content-type", "application/octet-stream");
  let asked: ByteRange = { kind: "whole" };
  if (ranges) {
    reply.header("accept-ranges", "bytes");
    if (ranges.etag !== null) reply.header("etag", ranges.etag);
    asked = byteRange(ranges.request, bytes, ranges.etag);
    if (asked.kind === "unsatisfiable") throw new RangeNotSatisfiableError(bytes);
  }
  if (asked.kind === "part") {
    const length = asked.end - asked.start + 1;
    reply.code(206);
    reply.header("content-range", contentRange(asked, bytes));
    reply.header("content-length", length);
    return headOnly ? Readable.from([]) : firstBytes(file.read(asked.start), length);
  }
  reply.header("content-length", bytes);
  // A HEAD's answer has the headers alone: the file is not opened (fastify would read a stream
  // through to its end).
  return headOnly ? Readable.from([]) : file.read();
}

/** The first `length` bytes of a stream; the stream is let go once they have come. */
function firstBytes(source: Readable, length: number): Readable {
  return Readable.from(
    (async function* () {
      let left = length;
      for await (const chunk of source as AsyncIterable<Buffer>) {
        if (chunk.length >= left) {
          yield chunk.subarray(0, left);
          return;
        }
        left -= chunk.length;
        yield chunk;
      }
    })(),
    { objectMode: false },
  );
}
