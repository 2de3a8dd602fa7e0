// Files that are not rows: job inputs, task outputs, logs, and later checkpoints.
// Keys are slash-separated relative paths ("jobs/12/inputs/grid"). Files move as streams.

import type { Readable } from "node:stream";

export interface BlobInfo {
  key: string;
  bytes: number;
}

export interface BlobStore {
  /**
   * Writes the whole blob from a stream; readers see the old blob or the new one, never a part
   * (DiskBlobStore: temp file + rename + fsync; PostgresBlobStore: one transaction).
   */
  write(key: string, data: Readable): Promise<BlobInfo>;
  /** Appends bytes at `offset`, which must equal the current size (idempotent resend: an offset below the size that matches is a no-op). Returns the new size. */
  append(key: string, offset: number, data: Buffer): Promise<number>;
  /**
   * A stream of the blob, optionally from a byte offset. A missing blob is a BlobNotFoundError:
   * thrown at once where the store can tell without waiting (DiskBlobStore), otherwise the stream's
   * error (PostgresBlobStore, which asks the database when the stream is first read).
   */
  read(key: string, offset?: number): Readable;
  stat(key: string): Promise<BlobInfo | null>;
  /** Blobs under a prefix (a folder), keys relative to the store, sorted. */
  list(prefix: string): Promise<BlobInfo[]>;
  deletePrefix(prefix: string): Promise<void>;
}

export class BlobNotFoundError extends Error {
  constructor(key: string) {
    super(`no such blob: ${key}`);
    this.name = "BlobNotFoundError";
  }
}
