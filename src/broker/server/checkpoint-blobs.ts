// The checkpoint blobs the reactor drops (reactor/effects.ts), deleted from the blob store: the
// objects no kept part names, and the manifest blobs a store of an earlier version wrote for the
// parts dropped (since then manifests are records only; deleting one that is absent is nothing).

import type { CheckpointBlobs } from "../reactor/effects.ts";
import { checkpointManifestKey, checkpointObjectKey, gangManifestKey } from "../store/blob-layout.ts";
import type { BlobStore } from "../store/blobs.ts";

export function checkpointBlobsIn(blobs: BlobStore): CheckpointBlobs {
  return {
    async drop({ jobId, taskIndex, objects, manifests }) {
      for (const { rank, generation } of manifests) {
        await blobs.deletePrefix(
          rank === null
            ? checkpointManifestKey(jobId, taskIndex, generation)
            : gangManifestKey(jobId, taskIndex, rank, generation),
        );
      }
      for (const sha of objects) await blobs.deletePrefix(checkpointObjectKey(jobId, taskIndex, sha));
    },
  };
}
