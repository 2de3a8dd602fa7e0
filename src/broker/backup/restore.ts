// `steward server --restore FILE`: unpacks a backup (backup.ts) into an empty data folder (and an
// empty --blobs folder, if given) before the server starts on it. Every name in the archive is
// checked: the database, the start tokens and blobs under blobs/; anything else stops the restore.
// What is held in memory is bounded (the manifest, and the tar reader's PAX headers: tar.ts); the
// files stream to disk.

import { createReadStream } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { createGunzip } from "node:zlib";
import { checkBlobKey } from "../store/blob-key-rules.ts";
import { BLOBS_PREFIX, DATABASE_NAME, MANIFEST_NAME, parseManifest } from "./backup.ts";
import { type FileSink, readTar } from "./tar.ts";

/** The largest manifest a restore reads (a backup's is some 100 bytes): it is held in memory. */
export const MAX_MANIFEST_BYTES = 64 * 1024;

/** The files of the data folder's top that a backup may hold besides the database. */
const TOP_FILES = new Set([DATABASE_NAME, "admin-token", "join-token"]);

export interface RestoreResult {
  files: number;
  blobs: number;
  bytes: number;
}

/** Unpacks `file` into `dataRoot` (the database, the tokens) and `blobsRoot` (the blobs). */
export async function restoreBackup(
  file: string,
  dataRoot: string,
  blobsRoot: string,
): Promise<RestoreResult> {
  const result: RestoreResult = { files: 0, blobs: 0, bytes: 0 };
  let manifest = false;
  let database = false;
  const input = createReadStream(file).pipe(createGunzip());
  await readTar(input, async (name, size) => {
    if (name === MANIFEST_NAME) {
      if (manifest) throw new Error(`${file} holds ${MANIFEST_NAME} twice`);
      if (size > MAX_MANIFEST_BYTES)
        throw new Error(
          `${file} is not a Steward backup (its ${MANIFEST_NAME} is ${size} bytes, more than ${MAX_MANIFEST_BYTES})`,
        );
      const chunks: Buffer[] = [];
      manifest = true;
      return {
        write: async (chunk) => void chunks.push(chunk),
        close: async () => void parseManifest(Buffer.concat(chunks).toString("utf8")),
      };
    }
    if (!manifest)
      throw new Error(`${file} is not a Steward backup (it does not start with ${MANIFEST_NAME})`);
    let target: string;
    if (TOP_FILES.has(name)) {
      target = join(dataRoot, name);
      if (name === DATABASE_NAME) database = true;
    } else if (name.startsWith(BLOBS_PREFIX)) {
      target = join(blobsRoot, ...checkBlobKey(name.slice(BLOBS_PREFIX.length)));
      result.blobs += 1;
    } else {
      throw new Error(`${file} holds ${name}, which is not part of a Steward backup`);
    }
    result.files += 1;
    result.bytes += size;
    return await fileSink(target);
  });
  if (!database) throw new Error(`${file} holds no database (${DATABASE_NAME})`);
  return result;
}

/** A new file (never one already there), synced when closed, readable by its owner only. */
async function fileSink(path: string): Promise<FileSink> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const handle = await open(path, "wx", 0o600);
  return {
    write: async (chunk) => {
      let done = 0;
      while (done < chunk.byteLength) done += (await handle.write(chunk, done)).bytesWritten;
    },
    close: async () => {
      await handle.sync();
      await handle.close();
    },
  };
}
