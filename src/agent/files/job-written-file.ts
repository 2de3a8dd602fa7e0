// Files a job wrote (outputs, checkpoint files, its progress and requirements), as the agent reads
// them. The agent may be root and the job another account that owns the folders these files are
// in: where a file is expected it may leave a link to the agent's join token or /etc/shadow, a
// fifo that never answers, or a device that acts when opened. So a file is opened with O_PATH,
// which opens nothing (no device acts, no fifo is waited on), and is taken only if it is a regular
// file and, for a job of another account, that account's own; it is then read through
// /proc/self/fd, which is that very file whatever the job renames or links meanwhile.

import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";

/** O_PATH (Linux; the same number on every architecture Node.js runs on there): not in fs.constants. */
const O_PATH = 0o10000000;

export interface JobFile {
  /** A path that reads the file opened, and no other, while it stays open. */
  readonly path: string;
  close(): Promise<void>;
}

/**
 * The regular file at `path` (links followed), if `owner` (a uid) owns it or `owner` is null (the
 * job runs as the agent's own account); null when it is absent or none of these.
 */
export async function openJobFile(path: string, owner: number | null): Promise<JobFile | null> {
  let handle: FileHandle;
  try {
    handle = await open(path, O_PATH);
  } catch {
    return null;
  }
  const info = await handle.stat().catch(() => null);
  if (!info?.isFile() || (owner !== null && info.uid !== owner)) {
    await handle.close();
    return null;
  }
  return { path: `/proc/self/fd/${handle.fd}`, close: () => handle.close() };
}

/** The start of a job's file (at most `maxBytes`) as text; null as for openJobFile, or when it cannot be read. */
export async function readJobFile(
  path: string,
  owner: number | null,
  maxBytes: number,
): Promise<string | null> {
  const file = await openJobFile(path, owner);
  if (!file) return null;
  try {
    const reader = await open(file.path, "r");
    try {
      const buffer = Buffer.alloc(maxBytes);
      const { bytesRead } = await reader.read(buffer, 0, maxBytes, 0);
      return buffer.subarray(0, bytesRead).toString("utf8");
    } finally {
      await reader.close();
    }
  } catch {
    return null;
  } finally {
    await file.close();
  }
}

/**
 * readJobFile with synchronous calls, for a small file read once per attempt on the agent's way
 * (a handful of system calls: far less than as many round trips through the thread pool).
 */
export function readJobFileSync(path: string, owner: number | null, maxBytes: number): string | null {
  let handle: number;
  try {
    handle = openSync(path, O_PATH);
  } catch {
    return null;
  }
  try {
    const info = fstatSync(handle);
    if (!info.isFile() || (owner !== null && info.uid !== owner)) return null;
    const reader = openSync(`/proc/self/fd/${handle}`, "r");
    try {
      const buffer = Buffer.alloc(maxBytes);
      const bytesRead = readSync(reader, buffer, 0, maxBytes, 0);
      return buffer.subarray(0, bytesRead).toString("utf8");
    } finally {
      closeSync(reader);
    }
  } catch {
    return null;
  } finally {
    closeSync(handle);
  }
}
