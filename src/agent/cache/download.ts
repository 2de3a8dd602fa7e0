// One download into a file: tried again a bounded number of times with a back-off, a transfer cut
// halfway resumed with a Range request where the server answers one (206), else started over; the
// SHA-256 computed as the bytes come, and checked against the expected one when there is one; the
// file synced to disk before it is handed back. A write refused for want of space (this host's disk
// full) is not tried again. A URL's server (url-source.ts), an s3: input's store (s3-source.ts) and
// the server's uploaded inputs (staging.ts) are all sources.

import { createHash, type Hash } from "node:crypto";
import { type FileHandle, open } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { retryDelayMs } from "../../common/transport/http-client.ts";
import { contentRangeStart, resumeHeaders, type Validators, validatorsOf } from "./cache-key.ts";

/** Where a download's bytes come from. */
export interface DownloadSource {
  /** What messages name it by: a URL without its credentials or query, or the input's name. */
  readonly name: string;
  /** One try: the answer to a GET with these headers (Range, If-Range, conditions). */
  open(headers: Record<string, string>, signal: AbortSignal): Promise<Response>;
  /**
   * A word that says why an answer of a failed status came (an S3 error code), read from it (its
   * body is this method's to read or cancel); absent: the status alone says it.
   */
  refusal?(response: Response): Promise<string | null>;
}

export interface DownloadPolicy {
  /** Tries in all, counting the first. */
  tries: number;
  /** The back-off after the first failed try; it doubles per try up to maxDelayMs. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** A try that receives no byte for this long is given up (and the download tried again). */
  idleTimeoutMs: number;
}

export const DOWNLOAD_POLICY: DownloadPolicy = {
  tries: 6,
  firstDelayMs: 500,
  maxDelayMs: 8_000,
  idleTimeoutMs: 60_000,
};

/** A download that failed for good: every try used, or an answer no later try would change (404). */
export class DownloadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DownloadError";
  }
}

/** The whole file came, but it is not the one the digest names. */
export class DigestMismatchError extends DownloadError {
  constructor(name: string, expected: string, got: string) {
    super(`sha256 mismatch for ${name}: expected ${expected}, got ${got}`);
    this.name = "DigestMismatchError";
  }
}

export type DownloadResult =
  /** The file holds the whole content: its digest, size, the answer's validators, the bytes that came over the network. */
  | { kind: "fetched"; sha256: string; bytes: number; validators: Validators; received: number }
  /** A conditional request was answered 304: what the cache holds is current; the file is empty. */
  | { kind: "not-modified" };

export interface DownloadOptions {
  /** The digest the content must have (lower-case hex); a mismatch is a DigestMismatchError. */
  sha256?: string;
  /** Headers that make the first request conditional (a cached URL's validators): a 304 is an answer. */
  conditional?: Record<string, string>;
  policy?: DownloadPolicy;
}

/** Statuses a later try may answer otherwise: the server's trouble, not the request's. */
export function retryable(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/** A try's failure that no other try would change. */
class Refused extends Error {}

/** What one try brought: the bytes so far, and whether they are the whole. */
interface Progress {
  offset: number;
  hash: Hash;
  validators: Validators;
  received: number;
}

/** A URL as messages show it: no credentials, query or fragment (they may carry secrets). */
export function shownUrl(url: string): string {
  const parsed = URL.parse(url);
  if (!parsed) return url.replace(/[?#].*$/, "");
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

/** Downloads `source` into the new file `path` (mode 0600); see the head of this file. */
export async function download(
  source: DownloadSource,
  path: string,
  options: DownloadOptions = {},
): Promise<DownloadResult> {
  const policy = options.policy ?? DOWNLOAD_POLICY;
  const file = await open(path, "wx", 0o600);
  const progress: Progress = {
    offset: 0,
    hash: createHash("sha256"),
    validators: {},
    received: 0,
  };
  try {
    for (let tried = 1; ; tried++) {
      try {
        const outcome = await oneTry(source, file, progress, options, policy.idleTimeoutMs);
        if (outcome === "not-modified") return { kind: "not-modified" };
        break;
      } catch (error) {
        if (error instanceof Refused) throw new DownloadError(`${source.name}: ${error.message}`);
        // This host's disk is full: no other try would change it; the error as it is (its code says why).
        if (writeRefusedForSpace(error)) throw error;
        if (tried >= policy.tries)
          throw new DownloadError(`${source.name}: ${describe(error)} (tried ${tried} times)`);
        await sleep(retryDelayMs(tried, Math.random(), { ...policy, budgetMs: Number.POSITIVE_INFINITY }));
      }
    }
    await file.sync();
  } finally {
    await file.close();
  }
  const sha256 = progress.hash.digest("hex");
  if (options.sha256 !== undefined && sha256 !== options.sha256)
    throw new DigestMismatchError(source.name, options.sha256, sha256);
  return {
    kind: "fetched",
    sha256,
    bytes: progress.offset,
    validators: progress.validators,
    received: progress.received,
  };
}

/** Starts the file over: what came so far is of another version, or cannot be resumed. */
async function restart(file: FileHandle, progress: Progress): Promise<void> {
  await file.truncate(0);
  progress.offset = 0;
  progress.hash = createHash("sha256");
}

/** One request and its body into the file; throws what makes the try a failure. */
async function oneTry(
  source: DownloadSource,
  file: FileHandle,
  progress: Progress,
  options: DownloadOptions,
  idleTimeoutMs: number,
): Promise<"done" | "not-modified"> {
  let range = resumeHeaders(progress.offset, progress.validators, options.sha256 !== undefined);
  if (range === null) {
    await restart(file, progress);
    range = {};
  }
  const resuming = progress.offset > 0;
  const headers = resuming ? range : { ...options.conditional };
  const controller = new AbortController();
  let timer = setTimeout(() => controller.abort(new Error("no byte came in time")), idleTimeoutMs);
  try {
    const response = await source.open(headers, controller.signal);
    const status = response.status;
    if (status === 304 && !resuming && options.conditional !== undefined) {
      await response.body?.cancel().catch(() => {});
      return "not-modified";
    }
    if (status === 416 && resuming) {
      // The server has no such part (its file shrank, or changed without a validator saying so).
      const from = progress.offset;
      await response.body?.cancel().catch(() => {});
      await restart(file, progress);
      throw new Error(`HTTP 416 to a request from byte ${from}`);
    }
    let total: number | null = null;
    if (status === 206 && resuming) {
      const start = contentRangeStart(response.headers.get("content-range"));
      if (start !== progress.offset) {
        await response.body?.cancel().catch(() => {});
        await restart(file, progress);
        throw new Error(`a part from ${start ?? "?"} came for a request from ${progress.offset}`);
      }
      const whole = /\/(\d+)$/.exec(response.headers.get("content-range") ?? "");
      total = whole ? Number(whole[1]) : null;
    } else if (status === 200) {
      // The whole content: a server that ignores Range, or whose file changed (If-Range).
      if (progress.offset > 0) await restart(file, progress);
      progress.validators = validatorsOf(response.headers);
      const length = response.headers.get("content-length");
      total = length !== null && /^\d+$/.test(length) ? Number(length) : null;
    } else {
      const word = source.refusal ? await source.refusal(response).catch(() => null) : null;
      await response.body?.cancel().catch(() => {});
      const what = word === null ? `HTTP ${status}` : `HTTP ${status} ${word}`;
      if (retryable(status)) throw new Error(what);
      throw new Refused(what);
    }
    if (response.body)
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        clearTimeout(timer);
        timer = setTimeout(() => controller.abort(new Error("no byte came in time")), idleTimeoutMs);
        await file.write(chunk, 0, chunk.length, progress.offset);
        progress.hash.update(chunk);
        progress.offset += chunk.length;
        progress.received += chunk.length;
      }
    if (total !== null && progress.offset < total)
      throw new Error(`the transfer ended at ${progress.offset} of ${total} bytes`);
    return "done";
  } finally {
    clearTimeout(timer);
  }
}

/** A write of the file refused for want of space (ENOSPC, or a quota used up: EDQUOT). */
function writeRefusedForSpace(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

/** A failed try in words: an HTTP status, or the network's error and its cause. */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const detail =
    cause instanceof Error ? `${error.message}: ${(cause as { code?: string }).code ?? cause.message}` : "";
  return detail || error.message;
}
