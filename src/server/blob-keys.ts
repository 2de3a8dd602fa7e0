// Where each kind of file lives in the blob store. Everything of a job is under jobs/<id>/,
// so removing a job removes one folder.

export const jobPrefix = (jobId: string) => `jobs/${jobId}`;

export const inputKey = (jobId: string, path: string) => `jobs/${jobId}/inputs/${path}`;

export const attemptPrefix = (jobId: string, task: number, attempt: number) =>
  `jobs/${jobId}/tasks/${task}/attempts/${attempt}`;

export const outputPrefix = (jobId: string, task: number, attempt: number) =>
  `${attemptPrefix(jobId, task, attempt)}/outputs`;

export const outputKey = (jobId: string, task: number, attempt: number, path: string) =>
  `${outputPrefix(jobId, task, attempt)}/${path}`;

export const logKey = (jobId: string, task: number, attempt: number, stream: "stdout" | "stderr") =>
  `${attemptPrefix(jobId, task, attempt)}/${stream}`;

export const checkpointPrefix = (jobId: string, task: number) => `jobs/${jobId}/tasks/${task}/checkpoint`;

export const checkpointObjectKey = (jobId: string, task: number, sha256: string) =>
  `${checkpointPrefix(jobId, task)}/objects/${sha256}`;

export const checkpointManifestKey = (jobId: string, task: number, generation: number) =>
  `${checkpointPrefix(jobId, task)}/manifests/${generation}.json`;
