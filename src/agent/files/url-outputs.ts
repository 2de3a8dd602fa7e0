// Outputs pushed to a URL (the job file's `{path, to}`): once the job succeeded the agent PUTs each
// file itself, never through the Steward server: to `s3://bucket/key` as a signed PUT of the object
// (its SHA-256 signed with it, so that the store refuses a body that changed on the way), to an
// `http:`/`https:` URL as a plain PUT (credentials in the URL sent as Basic authorization). A try
// that fails for the network or a server's trouble (5xx, 408, 429) is tried again with the
// download's back-off (cache/download.ts); a refusal (403, 404...) is not. A file is read as the
// job's own (job-written-file.ts): a link to another's file is refused, not pushed; a missing one
// is not pushed, and the server fails the attempt for it as for any missing output.

import { createHash } from "node:crypto";
import { createReadStream, openAsBlob } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { isS3Url, parseS3Url } from "../../common/model/s3-url.ts";
import { REQUEST_TIMEOUT_MS, retryDelayMs } from "../../common/transport/http-client.ts";
import { UPLOAD_MIN_BYTES_PER_SECOND } from "../../common/transport/upload-allowance.ts";
import { DOWNLOAD_POLICY, type DownloadPolicy, describe, retryable, shownUrl } from "../cache/download.ts";
import { s3Refusal } from "../cache/s3-source.ts";
import { withoutCredentials } from "../cache/url-source.ts";
import { objectUrl, type S3Settings } from "../s3/s3-settings.ts";
import { s3Request } from "../s3/s3-signing.ts";
import { openJobFile } from "./job-written-file.ts";

/** The largest object one S3 PUT may carry (a larger one needs a multipart upload, which this does not do). */
export const S3_PUT_MAX_BYTES = 5 * 1024 ** 3;

/** A push that failed for good: every try used, or a refusal no later try would change. */
export class PushError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PushError";
  }
}

/** A try's refusal: no later try would change it. */
class Refused extends Error {}

/** Where a file goes: a name for messages, and one try's PUT. */
interface PushTarget {
  name: string;
  put(file: string, bytes: number, signal: AbortSignal): Promise<Response>;
  refusal?(response: Response): Promise<string | null>;
}

/** The SHA-256 of a file, hex, read as a stream. */
async function fileSha256(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** The target of `to`: an S3 object under the settings, or an HTTP(S) URL. */
export function pushTarget(to: string, s3: () => S3Settings, now: () => Date = () => new Date()): PushTarget {
  if (isS3Url(to)) {
    const object = parseS3Url(to);
    if (typeof object === "string") throw new PushError(`${to} ${object}`);
    let settings: S3Settings;
    // A malformed endpoint or region fails at once, not after every try; so does a secret not held.
    try {
      settings = s3();
      objectUrl(object, settings);
    } catch (error) {
      throw new PushError(`${to}: ${error instanceof Error ? error.message : String(error)}`);
    }
    return {
      name: to,
      async put(file, bytes, signal) {
        if (bytes > S3_PUT_MAX_BYTES)
          throw new Refused(`${bytes} bytes, more than the ${S3_PUT_MAX_BYTES} one S3 PUT may carry`);
        const sha256 = await fileSha256(file);
        const request = s3Request(
          "PUT",
          object,
          settings,
          { "content-type": "application/octet-stream" },
          now(),
          sha256,
        );
        return fetch(request.url, {
          method: "PUT",
          headers: request.headers,
          body: await openAsBlob(file),
          signal,
          redirect: "manual",
        });
      },
      refusal: s3Refusal,
    };
  }
  const { target, headers: credentials } = withoutCredentials(to);
  const headers = { ...credentials, "content-type": "application/octet-stream" };
  return {
    name: shownUrl(to),
    put: async (file, _bytes, signal) =>
      fetch(target, { method: "PUT", headers, body: await openAsBlob(file), signal, redirect: "follow" }),
  };
}

/** Puts the file at `path` to `target`, tried again as the head of this file says; throws a PushError. */
export async function push(
  target: PushTarget,
  path: string,
  policy: DownloadPolicy = DOWNLOAD_POLICY,
): Promise<void> {
  const bytes = (await stat(path)).size;
  const timeoutMs = REQUEST_TIMEOUT_MS + Math.ceil((bytes / UPLOAD_MIN_BYTES_PER_SECOND) * 1000);
  for (let tried = 1; ; tried++) {
    try {
      const response = await target.put(path, bytes, AbortSignal.timeout(timeoutMs));
      if (response.ok) {
        await response.body?.cancel().catch(() => {});
        return;
      }
      const word = target.refusal ? await target.refusal(response).catch(() => null) : null;
      await response.body?.cancel().catch(() => {});
      const what = word === null ? `HTTP ${response.status}` : `HTTP ${response.status} ${word}`;
      if (!retryable(response.status)) throw new Refused(what);
      throw new Error(what);
    } catch (error) {
      if (error instanceof Refused) throw new PushError(`${target.name}: ${error.message}`);
      if (tried >= policy.tries)
        throw new PushError(`${target.name}: ${describe(error)} (tried ${tried} times)`);
      await sleep(retryDelayMs(tried, Math.random(), { ...policy, budgetMs: Number.POSITIVE_INFINITY }));
    }
  }
}

/**
 * Pushes each output to its URL; `pushed`: the paths pushed, `refused`: files there but not the
 * job's own. Throws a PushError (naming the URL) for the first push that fails for good.
 */
export async function pushOutputs(
  outputs: readonly { path: string; to: string; credentials?: string }[],
  runDir: string,
  owner: number | null,
  s3: (credentials?: string) => S3Settings,
  policy: DownloadPolicy = DOWNLOAD_POLICY,
): Promise<{ pushed: string[]; refused: string[] }> {
  const pushed: string[] = [];
  const refused: string[] = [];
  for (const output of outputs) {
    const file = await openJobFile(join(runDir, output.path), owner);
    if (!file) {
      if ((await stat(join(runDir, output.path)).catch(() => null))?.isFile()) refused.push(output.path);
      continue;
    }
    try {
      await push(
        pushTarget(output.to, () => s3(output.credentials)),
        file.path,
        policy,
      );
    } finally {
      await file.close();
    }
    pushed.push(output.path);
  }
  return { pushed, refused };
}
