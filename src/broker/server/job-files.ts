// The routes' port to a job's files (api/ports.ts JobFiles), over the blob store: each file by what
// it is, at the key the blob store's layout gives it (store/blob-layout.ts).

import { createHash } from "node:crypto";
import { pipeline, Readable, Transform } from "node:stream";
import { text } from "node:stream/consumers";
import type { JobFiles, StoredFile } from "../api/ports.ts";
import {
  checkpointObjectKey,
  inputDigestKey,
  inputKey,
  jobPrefix,
  logKey,
  outputKey,
  outputPrefix,
} from "../store/blob-layout.ts";
import type { BlobStore } from "../store/blobs.ts";

export function jobFilesIn(blobs: BlobStore): JobFiles {
  const stored = (key: string): StoredFile => ({
    size: async () => (await blobs.stat(key))?.bytes ?? null,
    read: (offset) => blobs.read(key, offset),
  });
  const store = async (key: string, content: Parameters<BlobStore["write"]>[1]) =>
    (await blobs.write(key, content)).bytes;
  return {
    input: (jobId, path) => stored(inputKey(jobId, path)),
    async storeInput(jobId, path, content) {
      const hash = createHash("sha256");
      const hashing = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          hash.update(chunk);
          done(null, chunk);
        },
      });
      // An error of the upload (cut, over its limit) reaches the blob store's write through it.
      const bytes = await store(
        inputKey(jobId, path),
        pipeline(content, hashing, () => {}),
      );
      const sha256 = hash.digest("hex");
      await store(inputDigestKey(jobId, path), Readable.from([sha256]));
      return { bytes, sha256 };
    },
    async inputDigest(jobId, path) {
      try {
        const digest = (await text(blobs.read(inputDigestKey(jobId, path)))).trim();
        return /^[0-9a-f]{64}$/.test(digest) ? digest : null;
      } catch {
        return null;
      }
    },
    log: (jobId, task, attempt, stream, rank) => stored(logKey(jobId, task, attempt, stream, rank)),
    async outputs(jobId, task, attempt) {
      const prefix = outputPrefix(jobId, task, attempt);
      return (await blobs.list(prefix)).map((blob) => ({
        path: blob.key.slice(prefix.length + 1),
        bytes: blob.bytes,
      }));
    },
    output: (jobId, task, attempt, path) => stored(outputKey(jobId, task, attempt, path)),
    storeOutput: (jobId, task, attempt, path, content) =>
      store(outputKey(jobId, task, attempt, path), content),
    checkpointObject: (jobId, task, sha256) => stored(checkpointObjectKey(jobId, task, sha256)),
    storeCheckpointObject: (jobId, task, sha256, content) =>
      store(checkpointObjectKey(jobId, task, sha256), content),
    deleteCheckpointObject: (jobId, task, sha256) =>
      blobs.deletePrefix(checkpointObjectKey(jobId, task, sha256)),
    deleteJobFiles: (jobId) => blobs.deletePrefix(jobPrefix(jobId)),
  };
}
