// `s3://bucket/key`, as a job file names an object of an S3-compatible store (an input's `url`, an
// output's `to`): the bucket is the URL's host, the key its path after the first `/`, percent-escapes
// decoded (`s3://b/a%20b` is the key `a b`; a key with a `%` of its own writes it `%25`). Checked at
// submit and read again by the agent, which turns it into an HTTP request (agent/cache/s3-settings.ts).
// No I/O.

/** A bucket and a key in it. */
export interface S3Object {
  bucket: string;
  key: string;
}

/**
 * What a bucket's name may hold: S3's rules (3 to 63 lower-case letters, digits, dots and hyphens)
 * widened to the older names some regions still hold (upper case, underscores, up to 255).
 */
const BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{1,253}[A-Za-z0-9]$/;

/** The longest key S3 takes, in bytes of UTF-8. */
export const S3_KEY_MAX_BYTES = 1024;

/** Whether `url` is an s3: URL (what is wrong with it is s3UrlProblem's). */
export function isS3Url(url: string): boolean {
  return url.slice(0, 3).toLowerCase() === "s3:";
}

/** What is wrong with an s3: URL, or null. */
export function s3UrlProblem(url: string): string | null {
  const parsed = parseS3Url(url);
  return typeof parsed === "string" ? parsed : null;
}

/** The bucket and key an s3: URL names; a string saying what is wrong with it otherwise. */
export function parseS3Url(url: string): S3Object | string {
  // Read from the text itself: a URL parser would take `a/../b` for `b` and drop what it cannot read.
  if (!isS3Url(url) || url.slice(3, 5) !== "//") return "is not an s3://bucket/key URL";
  if (url.includes("?") || url.includes("#"))
    return "has a query or a fragment: an s3: URL names the bucket and key only";
  const rest = url.slice(5);
  const slash = rest.indexOf("/");
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  if (bucket === "") return "names no bucket";
  if (bucket.includes("@"))
    return "holds credentials: an s3: URL names the bucket and key only (credentials come from the agent or a secret)";
  if (bucket.includes(":"))
    return "has a port: an s3: URL names the bucket and key only (the endpoint is the agent's)";
  if (!BUCKET.test(bucket))
    return `bucket ${JSON.stringify(bucket)} is not a bucket name (3 to 255 letters, digits, dots, hyphens, underscores)`;
  const path = slash < 0 ? "" : rest.slice(slash + 1);
  if (path === "") return "names no key: s3://bucket/key";
  let key: string;
  try {
    key = decodeURIComponent(path);
  } catch {
    return "has a malformed percent-escape in its key";
  }
  if (Buffer.byteLength(key) > S3_KEY_MAX_BYTES) return `its key is longer than ${S3_KEY_MAX_BYTES} bytes`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
  if (/[\u0000-\u001f\u007f]/.test(key)) return "its key holds a control character";
  // An HTTP path would lose them (`a/./b` is `a/b` to every client and server on the way).
  if (key.split("/").some((segment) => segment === "." || segment === ".."))
    return "its key has a . or .. segment, which no HTTP request can name";
  return { bucket, key };
}

/** An s3: URL's object; throws when it is not one (a URL checked at submit). */
export function s3ObjectOf(url: string): S3Object {
  const parsed = parseS3Url(url);
  if (typeof parsed === "string") throw new Error(`${url} ${parsed}`);
  return parsed;
}
