// The largest file a request may bring (`--max-upload-mb`): inputs at submit, outputs and
// checkpoint objects from agents. A larger one is refused with 413 and a message that names the
// limit; what was stored of it is dropped by the blob store (a write that fails leaves nothing).

import { type Readable, Transform } from "node:stream";

/** The default of `--max-upload-mb`: 4 GiB per file. */
export const DEFAULT_MAX_UPLOAD_MB = 4096;

/** The largest job file a submit may bring (JSON body or the multipart `job` field): 1 MiB. */
export const MAX_JOB_FILE_BYTES = 1024 * 1024;

export function jobFileTooLarge(): UploadTooLargeError {
  return new UploadTooLargeError(
    `the job file is larger than ${MAX_JOB_FILE_BYTES / 1024 / 1024} MiB; send big data as input files, not in the job file`,
  );
}

export class UploadTooLargeError extends Error {
  readonly statusCode = 413;
  readonly code = "too_large";
}

export function uploadTooLarge(what: string, maxBytes: number): UploadTooLargeError {
  return new UploadTooLargeError(
    `${what} is larger than the server's upload limit of ${Math.round(maxBytes / 1024 / 1024)} MB (--max-upload-mb)`,
  );
}

/** The body, failing with UploadTooLargeError once more than `maxBytes` have come. */
export function limitUpload(body: Readable, maxBytes: number, what: string): Readable {
  let seen = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > maxBytes) {
        body.resume();
        done(uploadTooLarge(what, maxBytes));
        return;
      }
      done(null, chunk);
    },
  });
  body.on("error", (error) => limited.destroy(error));
  return body.pipe(limited);
}
