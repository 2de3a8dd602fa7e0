// Blob deletions wait while a backup runs. A backup copies the records first, then the blobs: every
// blob the copied records name existed when the records were copied (a blob is written before the
// record that names it commits), and Steward deletes a blob only after the record change that stops
// naming it (a job's removal, a checkpoint pruned, a failed submit). So holding deletions back from
// before the records are copied until the blobs are copied is enough: the records in a backup never
// name a blob missing from it. Blobs written meanwhile are copied or not: extras no record names.

import type { Readable } from "node:stream";
import type { BlobInfo, BlobStore } from "../store/blobs.ts";

export class GatedBlobStore implements BlobStore {
  readonly inner: BlobStore;
  #holders = 0;
  #waiting: (() => void)[] = [];

  constructor(inner: BlobStore) {
    this.inner = inner;
  }

  /** Holds deletions back until the returned function is called (once). */
  holdDeletions(): () => void {
    this.#holders += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holders -= 1;
      if (this.#holders > 0) return;
      const waiting = this.#waiting;
      this.#waiting = [];
      for (const resume of waiting) resume();
    };
  }

  write(key: string, data: Readable): Promise<BlobInfo> {
    return this.inner.write(key, data);
  }

  append(key: string, offset: number, data: Buffer): Promise<number> {
    return this.inner.append(key, offset, data);
  }

  read(key: string, offset?: number): Readable {
    return this.inner.read(key, offset);
  }

  stat(key: string): Promise<BlobInfo | null> {
    return this.inner.stat(key);
  }

  list(prefix: string): Promise<BlobInfo[]> {
    return this.inner.list(prefix);
  }

  async deletePrefix(prefix: string): Promise<void> {
    while (this.#holders > 0) await new Promise<void>((resume) => this.#waiting.push(resume));
    return this.inner.deletePrefix(prefix);
  }
}
