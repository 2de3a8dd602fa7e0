// The rules for blob keys, the same for every BlobStore so that blobs can move between them: a key
// is a relative, slash-separated, normalised path that stays inside the store.

/** DiskBlobStore's temporary files start with this; keys may not have a segment that does. */
export const BLOB_TEMP_PREFIX = ".steward-tmp-";

/** Throws unless `key` is a relative slash-separated path that stays inside the store; returns its segments. */
export function checkBlobKey(key: string, what = "blob key"): string[] {
  if (typeof key !== "string" || key.length === 0) throw new Error(`${what} must not be empty`);
  if (key.includes("\0")) throw new Error(`${what} ${JSON.stringify(key)} contains NUL`);
  if (key.startsWith("/") || key.startsWith("\\") || /^[A-Za-z]:/.test(key)) {
    throw new Error(`${what} ${JSON.stringify(key)} must be relative`);
  }
  if (key.includes("\\")) throw new Error(`${what} ${JSON.stringify(key)} must use / as separator`);
  const segments = key.split("/");
  for (const segment of segments) {
    if (segment === "..") throw new Error(`${what} ${JSON.stringify(key)} leaves the store`);
    // Empty and "." segments would give one blob two names.
    if (segment === "" || segment === ".")
      throw new Error(`${what} ${JSON.stringify(key)} is not normalised`);
    if (segment.startsWith(BLOB_TEMP_PREFIX))
      throw new Error(`${what} ${JSON.stringify(key)} uses a reserved name`);
  }
  return segments;
}

/** A list/deletePrefix prefix without its trailing slashes: "" is the whole store. */
export function trimPrefix(prefix: string): string {
  return prefix.replace(/\/+$/, "");
}

/** Sorted as DiskBlobStore sorts them (UTF-16 code units), so every store lists in one order. */
export function compareKeys(a: { key: string }, b: { key: string }): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
