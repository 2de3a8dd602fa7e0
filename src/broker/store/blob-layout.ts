// Where each kind of file lives in the blob store. Everything of a job is under jobs/<id>/,
// so removing a job removes one folder.

export const jobPrefix = (jobId: string) => `jobs/${jobId}`;

export const inputKey = (jobId: string, path: string) => `jobs/${jobId}/inputs/${path}`;

/** The SHA-256 of an input (64 hex digits), stored beside it at submit: agents cache inputs by it. */
export const inputDigestKey = (jobId: string, path: string) => `jobs/${jobId}/input-digests/${path}`;

export const attemptPrefix = (jobId: string, task: number, attempt: number) =>
  `jobs/${jobId}/tasks/${task}/attempts/${attempt}`;

export const outputPrefix = (jobId: string, task: number, attempt: number) =>
  `${attemptPrefix(jobId, task, attempt)}/outputs`;

export const outputKey = (jobId: string, task: number, attempt: number, path: string) =>
  `${outputPrefix(jobId, task, attempt)}/${path}`;

/** An attempt's log; a multi-node attempt's rank above 0 has its own, under rank-R/. */
export const logKey = (
  jobId: string,
  task: number,
  attempt: number,
  stream: "stdout" | "stderr",
  rank = 0,
) =>
  rank === 0
    ? `${attemptPrefix(jobId, task, attempt)}/${stream}`
    : `${attemptPrefix(jobId, task, attempt)}/rank-${rank}/${stream}`;

export const checkpointPrefix = (jobId: string, task: number) => `jobs/${jobId}/tasks/${task}/checkpoint`;

export const checkpointObjectKey = (jobId: string, task: number, sha256: string) =>
  `${checkpointPrefix(jobId, task)}/objects/${sha256}`;

/** A checkpoint manifest as earlier versions stored it (records since: legacy-checkpoints.ts). */
export const checkpointManifestKey = (jobId: string, task: number, generation: number) =>
  `${checkpointPrefix(jobId, task)}/manifests/${generation}.json`;

/** A multi-node job's rank's checkpoint manifests, as earlier versions stored them (legacy-checkpoints.ts). */
export const gangManifestPrefix = (jobId: string, task: number, rank: number) =>
  `${checkpointPrefix(jobId, task)}/ranks/${rank}/manifests`;

export const gangManifestKey = (jobId: string, task: number, rank: number, generation: number) =>
  `${gangManifestPrefix(jobId, task, rank)}/${generation}.json`;
