// The routes' port to a job's files (api/ports.ts JobFiles), over the blob store: each file by what
// it is, at the key the blob store's layout gives it (store/blob-layout.ts).

import type { JobFiles, StoredFile } from "../api/ports.ts";
import {
  checkpointObjectKey,
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
    storeInput: (jobId, path, content) => store(inputKey(jobId, path), content),
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
