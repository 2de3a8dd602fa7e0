// The text of the job file (or workflow file) a request carries, kept while the request is
// answered so that a JobFileError's 400 names the line and column of its field: the body sent as
// YAML (or JSON as application/yaml), or the multipart `job` or `workflow` field. A body sent as
// application/json arrives as data, and its errors name the field alone.

import type { FastifyRequest } from "fastify";
import {
  type JobFileError,
  jobFileErrorMessage,
  parseFieldPath,
  type TextPlace,
} from "../../common/model/jobfile-error.ts";
import { placeJobFileError, placeOfField } from "../../common/model/jobfile-place.ts";

const texts = new WeakMap<FastifyRequest, string>();

/** Keeps the job file's text of this request (the last given, when a request carries more). */
export function keepJobFileText(request: FastifyRequest, text: string): void {
  texts.set(request, text);
}

/** The error as the 400 says it: with the place of its field when the request's text is kept. */
export function placedForRequest(request: FastifyRequest, error: JobFileError): JobFileError {
  const text = texts.get(request);
  return text === undefined ? error : placeJobFileError(error, text);
}

/**
 * A request's refusal naming a field of its job file (`qos`, `dependsOn[0]`, found past the
 * schema: a QoS tier not allowed, a dependency that is no job) as the 400 says it: the message
 * with the field's place, when the kept text has that field; as it was otherwise (a field of the
 * request, such as `Idempotency-Key`, is not the file's).
 */
export function placedRefusal(
  request: FastifyRequest,
  field: string,
  message: string,
): { message: string; place: TextPlace | null } {
  const text = texts.get(request);
  if (text === undefined || field === "" || !message.startsWith(`${field}: `))
    return { message, place: null };
  const place = placeOfField(text, parseFieldPath(field), true);
  if (!place) return { message, place: null };
  return { message: jobFileErrorMessage(field, message.slice(field.length + 2), place), place };
}
