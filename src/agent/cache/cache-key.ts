// What the content cache knows an input by, pure: its SHA-256 where one is given (a URL input's
// `sha256`, the digest the server stored with an uploaded input), else its URL, whose content is
// asked for again with the validators (ETag, Last-Modified) its server gave the last time; and the
// headers those choices make: a revalidation's, a resumed transfer's (Range, with If-Range).

import { createHash } from "node:crypto";

export type CacheKey = { kind: "digest"; sha256: string } | { kind: "url"; url: string };

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/**
 * The key of an input: its digest when it has a well-formed one, else its URL; null for neither
 * (an uploaded input the server stored no digest for, from an earlier version: fetched uncached).
 */
export function cacheKeyOf(input: { url?: string | null; sha256?: string | null }): CacheKey | null {
  if (typeof input.sha256 === "string" && SHA256_HEX.test(input.sha256))
    return { kind: "digest", sha256: input.sha256.toLowerCase() };
  if (typeof input.url === "string" && input.url !== "") return { kind: "url", url: input.url };
  return null;
}

/** One download at a time per name: a digest's, or a URL's. */
export function lockNameOf(key: CacheKey): string {
  return key.kind === "digest" ? `sha256:${key.sha256}` : `url:${key.url}`;
}

/** What a server said identifies the version of what it sent. */
export interface Validators {
  etag?: string;
  lastModified?: string;
}

/** The validators of an answer's headers (a weak ETag included: it still tells a version apart for a GET). */
export function validatorsOf(headers: Headers): Validators {
  const etag = headers.get("etag")?.trim();
  const lastModified = headers.get("last-modified")?.trim();
  return {
    ...(etag ? { etag } : {}),
    ...(lastModified ? { lastModified } : {}),
  };
}

/** Whether a URL's answer can be asked for again conditionally: it gave a validator. */
export function revalidatable(validators: Validators): boolean {
  return validators.etag !== undefined || validators.lastModified !== undefined;
}

/** The headers that ask a URL's server whether what the cache holds is still current. */
export function conditionalHeaders(validators: Validators): Record<string, string> {
  const headers: Record<string, string> = {};
  if (validators.etag !== undefined) headers["if-none-match"] = validators.etag;
  if (validators.lastModified !== undefined) headers["if-modified-since"] = validators.lastModified;
  return headers;
}

/**
 * The headers that resume a transfer cut after `offset` bytes, or null when it must start over:
 * the rest is asked for with Range, tied to the version the first bytes were by If-Range (a strong
 * ETag, else Last-Modified), so that a server whose file changed answers the whole new file (200)
 * rather than a part of another. With neither, a part is asked for only when the whole is checked
 * against a digest afterwards (a spliced file then fails that check).
 */
export function resumeHeaders(
  offset: number,
  validators: Validators,
  digestKnown: boolean,
): Record<string, string> | null {
  if (offset === 0) return {};
  const range = `bytes=${offset}-`;
  const strong = validators.etag !== undefined && !validators.etag.startsWith("W/");
  if (strong) return { range, "if-range": validators.etag as string };
  if (validators.lastModified !== undefined) return { range, "if-range": validators.lastModified };
  return digestKnown ? { range } : null;
}

/** Where a 206's Content-Range says its bytes start, or null when it is not `bytes START-END/...`. */
export function contentRangeStart(header: string | null): number | null {
  const match = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(header?.trim() ?? "");
  return match ? Number(match[1]) : null;
}

/** What the cache keeps of a URL: the validators of its last answer and the object that answer was. */
export interface UrlRecord extends Validators {
  url: string;
  sha256: string;
}

/** A URL record's file name in the cache's urls/ folder: the SHA-256 of the URL (any URL is a safe name so). */
export function urlRecordName(url: string): string {
  return `${createHash("sha256").update(url).digest("hex")}.json`;
}

/**
 * A URL record file's content as kept, or null for one that is unusable: unreadable, of another
 * URL than its name says, without a validator, or naming an object the cache no longer holds.
 */
export function parseUrlRecord(
  name: string,
  text: string,
  holds: (sha256: string) => boolean,
): UrlRecord | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const record = value as Record<string, unknown>;
  const { url, sha256, etag, lastModified } = record;
  if (typeof url !== "string" || urlRecordName(url) !== name) return null;
  if (typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256) || !holds(sha256)) return null;
  const validators: Validators = {
    ...(typeof etag === "string" ? { etag } : {}),
    ...(typeof lastModified === "string" ? { lastModified } : {}),
  };
  if (!revalidatable(validators)) return null;
  return { url, sha256, ...validators };
}
