// One S3 request's URL and headers, signed with AWS Signature V4 (the `aws4` package) when there
// are credentials, left unsigned when there are none (a public bucket). The clock is handed in (the
// request's X-Amz-Date); a request is signed anew for every try. The payload's SHA-256 is signed
// when the caller knows it (an upload), else `UNSIGNED-PAYLOAD` (a GET has no payload: the SHA-256
// of nothing). The headers hold the secret's signature, never the secret; they go nowhere but the
// request.

import aws4 from "aws4";
import type { S3Object } from "../../common/model/s3-url.ts";
import { objectUrl, type S3Settings } from "./s3-settings.ts";

/** The SHA-256 of an empty payload, as S3 wants it for a GET. */
export const EMPTY_PAYLOAD_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

export interface S3Request {
  url: URL;
  /** The headers to send, lower-case names (no Host: the URL's is the one signed). */
  headers: Record<string, string>;
}

/** `20240102T030405Z`: the form X-Amz-Date takes. */
export function amzDate(now: Date): string {
  return now.toISOString().replace(/[:-]|\.\d{3}/g, "");
}

/**
 * The request for `method` on `object` with `headers` (Range, If-None-Match, Content-Type...):
 * signed with the settings' credentials as of `now`, or unsigned without any.
 */
export function s3Request(
  method: "GET" | "HEAD" | "PUT",
  object: S3Object,
  settings: S3Settings,
  headers: Record<string, string>,
  now: Date,
  payloadSha256: string = method === "PUT" ? "UNSIGNED-PAYLOAD" : EMPTY_PAYLOAD_SHA256,
): S3Request {
  const url = objectUrl(object, settings);
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value;
  if (settings.credentials === null) return { url, headers: lower };
  const request = {
    method,
    host: url.host,
    path: `${url.pathname}${url.search}`,
    service: "s3",
    region: settings.region,
    headers: {
      ...lower,
      host: url.host,
      "x-amz-date": amzDate(now),
      "x-amz-content-sha256": payloadSha256,
    },
  };
  aws4.sign(request, {
    accessKeyId: settings.credentials.accessKeyId,
    secretAccessKey: settings.credentials.secretAccessKey,
    ...(settings.credentials.sessionToken !== undefined
      ? { sessionToken: settings.credentials.sessionToken }
      : {}),
  });
  const signed: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (name.toLowerCase() === "host" || value === undefined) continue;
    signed[name.toLowerCase()] = String(value);
  }
  return { url, headers: signed };
}

/** The error code of an S3 error document (`<Code>NoSuchKey</Code>`), or null: a word, never more of the body. */
export function s3ErrorCode(body: string): string | null {
  const match = /<Code>([A-Za-z0-9.]{1,64})<\/Code>/.exec(body);
  return match ? match[1] : null;
}
