// A backup of a running server with the embedded store: one gzipped tar holding a manifest, the
// SQLite database (an online copy), the data folder's start tokens and every blob. The records are
// copied first, then the blobs, with deletions held back meanwhile (deletion-gate.ts says why that
// is consistent). A PostgreSQL store is backed up with pg_dump instead (docs/operations.md).

import { closeSync, createReadStream, fstatSync, openSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pipeline, Readable } from "node:stream";
import { createGzip } from "node:zlib";
import { DiskBlobStore } from "../store/disk-blobs.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { Store } from "../store/store.ts";
import type { GatedBlobStore } from "./deletion-gate.ts";
import { fileHeader, padding, TAR_END } from "./tar.ts";

/** The archive's first entry: what it is, so a restore can tell a Steward backup from another tar. */
export const MANIFEST_NAME = "steward-backup.json";
export const DATABASE_NAME = "steward.db";
export const BLOBS_PREFIX = "blobs/";
export const BACKUP_FORMAT = 1;

export interface BackupManifest {
  format: number;
  createdAt: string;
  store: "sqlite";
}

/** The store cannot be backed up through the server (PostgreSQL, or blobs not in a folder). */
export class BackupUnsupportedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackupUnsupportedError";
  }
}

/**
 * Starts a backup: copies the database now (an error here is the caller's to answer), then gives the
 * archive as a stream that reads the blobs as it goes. Deletions wait until the stream ends or is
 * destroyed. `extras` are files (the start tokens) stored at the archive's top by their base name.
 */
export async function startBackup(
  store: Store,
  blobs: GatedBlobStore,
  extras: readonly string[],
): Promise<Readable> {
  if (!(store instanceof SqliteStore)) {
    throw new BackupUnsupportedError(
      "this server keeps its records in PostgreSQL: back them up with pg_dump (docs/operations.md, Backups); steward admin backup covers the embedded SQLite store",
    );
  }
  const disk = blobs.inner;
  if (!(disk instanceof DiskBlobStore)) {
    throw new BackupUnsupportedError("this server's blobs are not in a folder: back up their store directly");
  }
  const release = blobs.holdDeletions();
  let temp: string | null = null;
  try {
    // Beside the database: the copy is as private as it is and on the same file system.
    temp = await mkdtemp(join(dirname(store.path), ".backup-"));
    const database = join(temp, DATABASE_NAME);
    await store.backupTo(database);
    const folder = temp;
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      createdAt: new Date().toISOString(),
      store: "sqlite",
    };
    const entries = async function* (): AsyncGenerator<Buffer> {
      try {
        const text = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
        yield fileHeader(MANIFEST_NAME, text.byteLength);
        yield text;
        yield padding(text.byteLength);
        yield* fileEntry(database, DATABASE_NAME);
        for (const extra of extras) yield* fileEntry(extra, basename(extra));
        for (const blob of await disk.list("")) {
          yield* fileEntry(join(disk.root, ...blob.key.split("/")), `${BLOBS_PREFIX}${blob.key}`);
        }
        yield TAR_END;
      } finally {
        release();
        await rm(folder, { recursive: true, force: true });
      }
    };
    // pipeline, not pipe: when the client goes away the server destroys the gzip stream, and the
    // source must end too (its finally releases the deletions and removes the copy).
    const archive = createGzip();
    pipeline(Readable.from(entries()), archive, () => {});
    return archive;
  } catch (error) {
    release();
    if (temp) await rm(temp, { recursive: true, force: true });
    throw error;
  }
}

/**
 * One file's entry. Its size is taken from the open file: a log appended to meanwhile is copied up to
 * that size, and a blob replaced (written anew: a rename) is copied as it was when opened.
 */
async function* fileEntry(path: string, name: string): AsyncGenerator<Buffer> {
  const fd = openSync(path, "r");
  let size: number;
  try {
    size = fstatSync(fd).size;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  yield fileHeader(name, size);
  let sent = 0;
  if (size > 0) {
    for await (const chunk of createReadStream(path, { fd, start: 0, end: size - 1 })) {
      sent += (chunk as Buffer).byteLength;
      yield chunk as Buffer;
    }
  } else {
    closeSync(fd);
  }
  if (sent !== size) throw new Error(`${name} shrank while it was copied (${sent} of ${size} bytes)`);
  yield padding(size);
}

/** The manifest's text, checked. */
export function parseManifest(text: string): BackupManifest {
  const manifest = JSON.parse(text) as Partial<BackupManifest>;
  if (manifest.format !== BACKUP_FORMAT) {
    throw new Error(
      `backup format ${String(manifest.format)} is not one this Steward reads (${BACKUP_FORMAT})`,
    );
  }
  return manifest as BackupManifest;
}
