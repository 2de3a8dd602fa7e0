// A write refused because the storage it goes to is full: the SQLite store's file system
// (SQLITE_FULL) or the blob folder's (ENOSPC, EDQUOT). Nothing of the write is kept (SQLite rolls
// the transaction back; a blob's temporary file is removed, an append cut back), so the store is as
// it was before the write. The API answers it 507 Insufficient Storage naming the path, and the
// broker goes on: it serves reads, and takes writes again once space is freed there.

export class StorageFullError extends Error {
  /** The store's file or the blob folder: where space must be freed. */
  readonly path: string;

  constructor(path: string, detail: string) {
    super(`no space left for ${path} (${detail}): writes are refused until space is freed there`);
    this.name = "StorageFullError";
    this.path = path;
  }
}

/** SQLite's primary result code for a full disk (an extended code keeps it in its low byte). */
export const SQLITE_FULL = 13;

/** The errno codes of a full file system, and of a quota used up. */
export const FULL_ERRNO_CODES: readonly string[] = ["ENOSPC", "EDQUOT"];

/**
 * `error` as a StorageFullError naming `path` when it says the storage is full (node:sqlite's
 * SQLITE_FULL, a system call's ENOSPC or EDQUOT); null for any other error. An error from the
 * SQLite writer's thread keeps these fields across the thread (threads/request-thread.ts).
 */
export function storageFullOf(error: unknown, path: string): StorageFullError | null {
  if (error instanceof StorageFullError) return error;
  if (typeof error !== "object" || error === null) return null;
  const { errcode, errstr, code } = error as { errcode?: unknown; errstr?: unknown; code?: unknown };
  if (typeof errcode === "number" && (errcode & 0xff) === SQLITE_FULL)
    return new StorageFullError(path, typeof errstr === "string" ? errstr : "database or disk is full");
  if (typeof code === "string" && FULL_ERRNO_CODES.includes(code))
    return new StorageFullError(path, code === "EDQUOT" ? "disk quota exceeded" : "no space left on device");
  return null;
}
