// Submits as multipart/form-data (a job's or a workflow's): a field that carries the file (JSON, or
// YAML as on disk) first, then one part per input. The parts as they come, the field read as data,
// an input stored under the upload limit, and what a failed upload is answered with; also the body
// the document shows for such a submit.

import type { Readable } from "node:stream";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { JobFileError } from "../../common/model/jobfile-error.ts";
import { parseJobFileText } from "../../common/model/jobfile-text.ts";
import { InvalidRequestError } from "../reactor/errors.ts";
import { keepJobFileText } from "./job-file-source.ts";
import { jobFileTooLarge, limitUpload, UploadTooLargeError, uploadTooLarge } from "./upload-limit.ts";

/**
 * A submit's body as the document shows it: the file as JSON (`json`, its schema) or as YAML, or
 * multipart with the file in `field`, then one binary part per input (`parts` says how they are named).
 */
export function submitBody(file: {
  json: Record<string, unknown>;
  yaml: string;
  field: string;
  fieldDescription: string;
  parts: string;
}) {
  return z.unknown().meta({
    content: {
      "application/json": { schema: file.json },
      "application/yaml": { schema: { type: "string", description: file.yaml } },
      "multipart/form-data": {
        schema: {
          type: "object",
          properties: {
            [file.field]: { type: "string", description: file.fieldDescription },
          },
          required: [file.field],
          additionalProperties: {
            type: "string",
            format: "binary",
            description: file.parts,
          },
        },
      },
    },
  });
}

/**
 * The multipart `job` field as data: JSON, or else YAML (the job file's text as on disk, which a
 * client without a YAML parser sends as it is).
 */
export function parseJobField(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    try {
      return parseJobFileText(text);
    } catch (error) {
      // "job: not valid YAML or JSON: ... (line 3, column 1)": the place is in the field's text.
      if (!(error instanceof JobFileError)) throw error;
      const { place } = error;
      const at = place ? ` (line ${place.line}, column ${place.column})` : "";
      throw new InvalidRequestError("job", `${error.problem}${at}`);
    }
  }
}

/**
 * The field that carries the file, as data: one cut at the size limit is refused (413), and its
 * text is kept for the places a 400 names (job-file-source.ts).
 */
export function fileFieldData(
  request: FastifyRequest,
  field: { value: unknown; valueTruncated: boolean },
): unknown {
  if (field.valueTruncated) throw jobFileTooLarge();
  keepJobFileText(request, String(field.value));
  return parseJobField(String(field.value));
}

/**
 * Stores an input part through `write`, refused past `maxUploadBytes` (`what` names it there); a
 * failed upload is answered as uploadError says (`shown` names the part there).
 */
export async function storeUpload(
  file: Readable,
  { maxUploadBytes, what, shown }: { maxUploadBytes: number; what: string; shown: string },
  write: (content: Readable) => Promise<unknown>,
): Promise<void> {
  try {
    await write(limitUpload(file, maxUploadBytes, what));
  } catch (error) {
    throw uploadError(error, file, shown, maxUploadBytes);
  }
}

/**
 * Why an input's upload failed: too large (413), a body cut short or malformed (400, the request's
 * fault: the file's stream failed, before or while it was read), or else the blob store's (500).
 */
export function uploadError(error: unknown, file: Readable, what: string, maxUploadBytes: number): Error {
  if (error instanceof UploadTooLargeError) return error;
  const broken = file.errored;
  // The parser's own size limit (the same number) says so with a 413 of its own.
  if ((broken as { statusCode?: number } | null)?.statusCode === 413)
    return uploadTooLarge(what, maxUploadBytes);
  if (broken) return malformedMultipart(broken);
  if (file.destroyed && !file.readableEnded) return malformedMultipart(error);
  return error as Error;
}

/** A multipart body the parser could not read: a 400 that says so. */
function malformedMultipart(error: unknown): InvalidRequestError {
  return new InvalidRequestError("body", `malformed multipart body: ${(error as Error).message}`);
}

/** The request's parts; a body the parser cannot read is the request's fault (400), not the server's. */
export async function* multipartParts(request: FastifyRequest) {
  const iterator = request.parts()[Symbol.asyncIterator]();
  for (;;) {
    let next: Awaited<ReturnType<typeof iterator.next>>;
    try {
      next = await iterator.next();
    } catch (error) {
      // Limits (file count, size) come with their own 4xx status: those pass as they are.
      if ((error as { statusCode?: number }).statusCode) throw error;
      throw malformedMultipart(error);
    }
    if (next.done) return;
    yield next.value;
  }
}

/** A repeated submit's parts: its inputs are in already, so the parts are read past, not stored again. */
export async function readPastParts(request: FastifyRequest): Promise<void> {
  for await (const part of multipartParts(request)) if (part.type === "file") part.file.resume();
}
