// An s3: input's store as a download source (download.ts): a GET of the object, signed anew for
// each try (s3/s3-signing.ts) with the settings resolved for the attempt (s3/s3-settings.ts), sent
// by the agent itself, never through the Steward server. Redirects are not followed: S3 answers one
// for a bucket of another region, which the signature does not fit. A refusal is named by the S3
// error code of its body (`HTTP 403 SignatureDoesNotMatch`), never more of it; messages name the
// s3: URL, never the endpoint's credentials or the request's headers.

import { parseS3Url } from "../../common/model/s3-url.ts";
import { objectUrl, type S3Settings } from "../s3/s3-settings.ts";
import { s3ErrorCode, s3Request } from "../s3/s3-signing.ts";
import type { DownloadSource } from "./download.ts";

/** The most of an error answer's body read for its code. */
export const ERROR_BODY_MAX_BYTES = 16 * 1024;

export function s3Source(
  url: string,
  settings: S3Settings,
  now: () => Date = () => new Date(),
): DownloadSource {
  const object = parseS3Url(url);
  if (typeof object === "string") throw new Error(`${url} ${object}`);
  // A malformed endpoint or region fails at once, not after every try.
  try {
    objectUrl(object, settings);
  } catch (error) {
    throw new Error(`${url}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return {
    name: url,
    open: (headers, signal) => {
      const request = s3Request("GET", object, settings, headers, now());
      return fetch(request.url, { headers: request.headers, signal, redirect: "manual" });
    },
    refusal: s3Refusal,
  };
}

/** The S3 error code of a refused answer (its body read no further than ERROR_BODY_MAX_BYTES), or null. */
export async function s3Refusal(response: Response): Promise<string | null> {
  if (!response.body) return null;
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    while (bytes < ERROR_BODY_MAX_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      bytes += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return s3ErrorCode(Buffer.concat(chunks).subarray(0, ERROR_BODY_MAX_BYTES).toString("utf8"));
}
