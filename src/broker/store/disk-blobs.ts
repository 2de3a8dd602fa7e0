// Blobs as files under one folder. A write goes to a temporary file next to its target, is fsynced,
// renamed over the target and the folder fsynced: a reader sees the old blob or the new one, and a
// crash leaves at worst a temporary file, which list() does not show. Everything moves as streams.
// A write or an append refused for a full file system (ENOSPC, EDQUOT) leaves nothing of itself (the
// temporary file removed, the append cut back) and fails with a StorageFullError naming the folder.

import { closeSync, createReadStream, type Dirent, fstatSync, openSync } from "node:fs";
import { type FileHandle, mkdir, open, readdir, rename, rm, stat, unlink } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import type { Readable } from "node:stream";
import { BLOB_TEMP_PREFIX, checkBlobKey, compareKeys, trimPrefix } from "./blob-key-rules.ts";
import { type BlobInfo, BlobNotFoundError, type BlobStore } from "./blobs.ts";
import { KeyedLock } from "./keyed-lock.ts";
import { storageFullOf } from "./storage-full.ts";

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

async function fsyncDirectory(path: string): Promise<void> {
  // Windows cannot open a folder for fsync, and does not need it for renames to last.
  if (process.platform === "win32") return;
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export class DiskBlobStore implements BlobStore {
  readonly root: string;
  // Writes and appends to one key run one at a time, so an append's size check and its write agree.
  #locks = new KeyedLock();

  constructor(root: string) {
    this.root = root;
  }

  async write(key: string, data: Readable): Promise<BlobInfo> {
    let path: string;
    try {
      path = this.#path(key);
    } catch (error) {
      data.destroy(); // the stream is ours once handed over: do not leave its source hanging
      throw error;
    }
    const written = this.#locks.run(key, async () => {
      const folder = dirname(path);
      const created = await mkdir(folder, { recursive: true });
      const temp = join(folder, `${BLOB_TEMP_PREFIX}${process.pid}-${Math.random().toString(36).slice(2)}`);
      let bytes = 0;
      const handle = await open(temp, "wx");
      try {
        for await (const chunk of data) {
          const buffer = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Uint8Array);
          await writeAll(handle, buffer);
          bytes += buffer.byteLength;
        }
        await handle.sync();
        await handle.close();
        await rename(temp, path);
      } catch (error) {
        data.destroy();
        await handle.close().catch(() => {});
        await unlink(temp).catch(() => {});
        throw error;
      }
      await this.#syncFolders(folder, created);
      return { key, bytes };
    });
    return fullAsStorageFull(written, this.root);
  }

  async append(key: string, offset: number, data: Buffer): Promise<number> {
    const path = this.#path(key);
    if (!Number.isSafeInteger(offset) || offset < 0) throw new Error(`bad offset ${offset} for ${key}`);
    const appended = this.#locks.run(key, async () => {
      const folder = dirname(path);
      let created: string | undefined;
      let isNew = false;
      let handle: FileHandle;
      try {
        handle = await open(path, "r+");
      } catch (error) {
        if (!isMissing(error)) throw error;
        if (offset > 0) throw new Error(`append to ${key} at ${offset}, but there is no such blob yet`);
        created = await mkdir(folder, { recursive: true });
        handle = await open(path, "wx+");
        isNew = true;
      }
      try {
        const size = (await handle.stat()).size;
        if (offset > size)
          throw new Error(`append to ${key} at ${offset}, but the blob has only ${size} bytes`);
        // A resend of bytes already there (the sender did not hear our answer): check they are the
        // same, and write only what lies past the end.
        const overlap = Math.min(size - offset, data.byteLength);
        if (overlap > 0) {
          const there = Buffer.alloc(overlap);
          const { bytesRead } = await handle.read(there, 0, overlap, offset);
          if (bytesRead !== overlap || !there.equals(data.subarray(0, overlap))) {
            throw new Error(`append to ${key} at ${offset} differs from the bytes already there`);
          }
        }
        const rest = data.subarray(overlap);
        if (rest.byteLength === 0) return size;
        try {
          await writeAll(handle, rest, size);
          await handle.datasync();
        } catch (error) {
          // What went in before the disk filled up is cut back: the blob is as it was.
          await handle.truncate(size).catch(() => {});
          throw error;
        }
        return size + rest.byteLength;
      } finally {
        await handle.close();
        if (isNew) await this.#syncFolders(folder, created);
      }
    });
    return fullAsStorageFull(appended, this.root);
  }

  read(key: string, offset = 0): Readable {
    const path = this.#path(key);
    // Opened now, so a missing blob throws here, and a later rename over it does not cut this reader.
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (error) {
      if (isMissing(error) || (error as NodeJS.ErrnoException).code === "EISDIR") {
        throw new BlobNotFoundError(key);
      }
      throw error;
    }
    if (!fstatSync(fd).isFile()) {
      closeSync(fd);
      throw new BlobNotFoundError(key);
    }
    return createReadStream(path, { fd, start: offset });
  }

  async stat(key: string): Promise<BlobInfo | null> {
    const path = this.#path(key);
    try {
      const info = await stat(path);
      return info.isFile() ? { key, bytes: info.size } : null;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    const trimmed = trimPrefix(prefix);
    const start = trimmed === "" ? this.root : this.#path(trimmed, "blob prefix");
    const info = await stat(start).catch((error) => {
      if (isMissing(error)) return null;
      throw error;
    });
    if (info === null) return [];
    // The prefix may name a blob itself.
    if (info.isFile()) return [{ key: this.#key(start), bytes: info.size }];
    const found: BlobInfo[] = [];
    await this.#walk(start, found);
    return found.sort(compareKeys);
  }

  async deletePrefix(prefix: string): Promise<void> {
    // An empty prefix would be the whole store: never what a caller means.
    const path = this.#path(trimPrefix(prefix), "blob prefix");
    await rm(path, { recursive: true, force: true });
  }

  async #walk(path: string, found: BlobInfo[]): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(path, { withFileTypes: true });
    } catch (error) {
      if (isMissing(error)) return; // deleted while we walked
      throw error;
    }
    for (const entry of entries) {
      if (entry.name.startsWith(BLOB_TEMP_PREFIX)) continue;
      const child = join(path, entry.name);
      if (entry.isDirectory()) {
        await this.#walk(child, found);
      } else if (entry.isFile()) {
        try {
          found.push({ key: this.#key(child), bytes: (await stat(child)).size });
        } catch (error) {
          if (!isMissing(error)) throw error; // deleted while we walked
        }
      }
    }
  }

  #path(key: string, what?: string): string {
    return join(this.root, ...checkBlobKey(key, what));
  }

  #key(path: string): string {
    return relative(this.root, path).split(sep).join("/");
  }

  /** fsyncs `folder` and, when mkdir created folders, each of them up to the parent of the first. */
  async #syncFolders(folder: string, created: string | undefined): Promise<void> {
    await fsyncDirectory(folder);
    if (created === undefined) return;
    const top = dirname(created);
    for (let path = dirname(folder); path.length >= top.length; path = dirname(path)) {
      await fsyncDirectory(path);
      if (path === top || path === dirname(path)) break;
    }
  }
}

/** `work`'s failure for a full file system as a StorageFullError naming `root`; others as they are. */
async function fullAsStorageFull<T>(work: Promise<T>, root: string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw storageFullOf(error, root) ?? error;
  }
}

async function writeAll(handle: FileHandle, buffer: Uint8Array, position?: number): Promise<void> {
  let done = 0;
  while (done < buffer.byteLength) {
    const at = position === undefined ? null : position + done;
    const { bytesWritten } = await handle.write(buffer, done, buffer.byteLength - done, at);
    done += bytesWritten;
  }
}
