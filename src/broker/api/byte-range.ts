// Which bytes of a stored file a GET asks for (RFC 9110 section 14): the whole file, one part of it
// (a `Range: bytes=...` of one range, so that an agent resumes a download cut halfway), or none it
// has (a range past its end). Pure: the request's headers, the file's size and its entity tag in.
//
// - Only the `bytes` unit and a single range are answered with a part; any other Range (another
//   unit, several ranges, a malformed one) is ignored and the whole file sent, as the RFC lets a
//   server do.
// - `If-Range` ties the part to a version of the file: the part is sent only when it is the file's
//   own strong entity tag, else the whole file (a date never matches: the server gives no
//   Last-Modified, so a client cannot know one it would match).
// - A range that starts at or past the end (or a suffix of 0 bytes) is not satisfiable: 416.

/** What to send. */
export type ByteRange =
  | { kind: "whole" }
  /** Bytes `start` to `end`, both included. */
  | { kind: "part"; start: number; end: number }
  | { kind: "unsatisfiable" };

/** The headers of a request that bear on a range, as received (absent: undefined). */
export interface RangeRequest {
  range?: string;
  ifRange?: string;
}

const SINGLE_RANGE = /^bytes=(\d*)-(\d*)$/i;

/**
 * The bytes a request asks for of a file of `size` bytes whose strong entity tag is `etag` (null
 * when it has none: an If-Range then never matches).
 */
export function byteRange(request: RangeRequest, size: number, etag: string | null): ByteRange {
  const whole: ByteRange = { kind: "whole" };
  if (request.range === undefined) return whole;
  if (request.ifRange !== undefined && (etag === null || request.ifRange.trim() !== etag)) return whole;
  const match = SINGLE_RANGE.exec(request.range.trim());
  if (!match) return whole;
  const [, first, last] = match;
  if (first === "" && last === "") return whole;
  if (first === "") {
    // A suffix: the last N bytes.
    const length = Number(last);
    if (length === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "part", start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  // An end before its start makes the range invalid: ignored.
  if (last !== "" && Number(last) < start) return whole;
  if (start >= size) return { kind: "unsatisfiable" };
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1);
  return { kind: "part", start, end };
}

/** The Content-Range of a part of a file of `size` bytes, or of a 416 (`part` null). */
export function contentRange(part: { start: number; end: number } | null, size: number): string {
  return part === null ? `bytes */${size}` : `bytes ${part.start}-${part.end}/${size}`;
}

/** The strong entity tag of a file known by its SHA-256: the same bytes, the same tag. */
export function digestEtag(sha256: string): string {
  return `"${sha256}"`;
}
