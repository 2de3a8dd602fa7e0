// A file the agent makes for itself in its work folder (an attempt's start.json, stdout, stderr
// and nodes, a temporary file renamed into place: stop, the host credential): whatever is at its
// name goes first (unlink never follows a link), and the file is made with O_EXCL | O_NOFOLLOW, so
// that a link planted there (while the folder was open to others, or by a job of the agent's
// account) is never written through: on a run-as host the agent is root.

import { closeSync, constants, openSync, unlinkSync, writeSync } from "node:fs";

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

/** Flags that make a new file, never one that is there, nor through a link. */
export const NEW_FILE = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;

/** Writes `content` to a new file at `path` (mode `mode`), whatever was there. A folder there throws. */
export function writeNewFile(path: string, content: string | Buffer, mode = 0o600): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const fd = openSync(path, NEW_FILE, mode);
  try {
    const bytes = typeof content === "string" ? Buffer.from(content) : content;
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
  } finally {
    closeSync(fd);
  }
}
