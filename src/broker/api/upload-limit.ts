// The largest file a request may bring (`--max-upload-mb`): inputs at submit, outputs and
// checkpoint objects from agents. A larger one is refused with 413 and a message that names the
// limit; what was stored of it is dropped by the blob store (a write that fails leaves nothing).

import { finished, type Readable, Transform } from "node:stream";

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

/**
 * The body, failing with UploadTooLargeError once more than `maxBytes` have come; `observe` sees
 * each chunk on its way (a checksum). An error of the
 * body (cut short, malformed), even one it had before this call, fails the result, and its reader
 * sees it whenever it starts reading: a failed upload never hangs its request, and never emits an
 * 'error' nobody hears (which would end the process). Once the result is done with (read, failed
 * or given up by its reader), the rest of the body is read past, so that the request can be
 * answered; the body itself is not destroyed (it may be the request, which carries the answer).
 */
export function limitUpload(
  body: Readable,
  maxBytes: number,
  what: string,
  observe: (chunk: Buffer) => void = () => {},
): Readable {
  let seen = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > maxBytes) {
        done(uploadTooLarge(what, maxBytes));
        return;
      }
      observe(chunk);
      done(null, chunk);
    },
  });
  finished(body, (error) => {
    if (error) limited.destroy(error);
  });
  // pipe() re-emits a destination's error when nothing else listens: the reader, who may not have
  // started yet, learns of it from the stream's state instead.
  limited.on("error", () => {});
  limited.on("close", () => {
    body.unpipe(limited);
    if (!body.readableEnded && !body.destroyed) body.resume();
  });
  return body.pipe(limited);
}
