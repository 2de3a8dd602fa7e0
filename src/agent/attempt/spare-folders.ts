// Attempt folders kept for the next attempts of jobs run as the agent's own account. A short task
// otherwise makes and removes ten files and folders; on some filesystems that costs more than the
// task (ext4 without a journal passes over every inode freed in the last seconds for each new one,
// and frees data blocks with a discard). A retired folder keeps the parts only the agent and the
// supervisor write (start.json, job.sh, pid, exit: rewritten in place, without truncating to
// nothing, which would make ext4 allocate their blocks at once); the parts a job touches (run/,
// checkpoint/, notes/, stdout, stderr and whatever else it left) go, and the next attempt gets new
// ones, so that a process the job left behind that still holds one of them never reaches the next
// job's.
// Kept folders live in spare/, beside attempts/: a restarted agent never takes one for an attempt.

import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmdirSync,
  rmSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { basename, join } from "node:path";
import { writeNewFile } from "../files/new-file.ts";
import { removeOwnAttemptFolder } from "./attempt-folder.ts";

const { O_RDWR, O_NOFOLLOW, O_NONBLOCK } = constants;

/** How many retired folders the agent keeps at least (twice its slots when that is more): as many as run at once make no new folder. */
export const SPARE_FOLDERS_MAX = 64;

/**
 * The files a kept folder keeps: only the agent and the supervisor write them (`times`: the
 * supervisor's CPU times of an attempt without a cgroup, shell-times.ts).
 */
export const KEPT_FILES = ["start.json", "job.sh", "pid", "exit", "times"] as const;

/** What the supervisor's records (pid, exit) read while nothing is recorded: blank, not a value. */
export const BLANK_RECORD = "\n";

/**
 * Writes `content` over a kept file in place: no truncation to nothing (ext4 would allocate the
 * file's blocks at once on close), only down to the new length. Makes the file when there is none.
 * What is not a plain file of its own there (a link, a hard link to another file, a fifo: a job of
 * the agent's account may leave one in a kept folder) is never written through: it is replaced by
 * a new file (new-file.ts).
 */
export function writeInPlace(path: string, content: string | Buffer): void {
  const bytes = typeof content === "string" ? Buffer.from(content) : content;
  let fd: number;
  try {
    fd = openSync(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ELOOP") throw error;
    writeNewFile(path, bytes);
    return;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.nlink !== 1) {
      closeSync(fd);
      fd = -1;
      writeNewFile(path, bytes);
      return;
    }
    writeSync(fd, bytes, 0, bytes.length, 0);
    ftruncateSync(fd, bytes.length);
  } finally {
    if (fd >= 0) closeSync(fd);
  }
}

/**
 * The parts a job touches that a folder may keep when nothing of its last job can still hold them
 * (its cgroup was seen empty): its folders while empty, its logs while empty. Removing a folder
 * frees its block, which costs more than the rest of a short task on some filesystems (ext4 with
 * discard: `rmdir` was the agent's largest cost per `true` task), and the next attempt makes it anew.
 */
export const EMPTY_PARTS_KEPT = ["run", "checkpoint", "stdout", "stderr"] as const;

/** The agent's own uid (it never changes while it runs). */
const OWN_UID = process.getuid?.() ?? -1;

/**
 * Whether `path` is an empty part the next attempt may take as new: a folder of the agent's own,
 * mode 0700, with nothing in it, or a plain file of its own, 0600, empty, with no other link.
 */
function isEmptyPart(path: string, isDirectory: boolean): boolean {
  const info = lstatSync(path, { throwIfNoEntry: false });
  const uid = OWN_UID;
  if (!info || info.uid !== uid) return false;
  if (isDirectory)
    return info.isDirectory() && (info.mode & 0o7777) === 0o700 && readdirSync(path).length === 0;
  return info.isFile() && (info.mode & 0o7777) === 0o600 && info.size === 0 && info.nlink === 1;
}

/**
 * Empties a folder down to its kept files: everything else goes, and so does a kept name that is
 * no longer a plain file of its own (a job of the agent's account could swap one for a link);
 * pid and exit read blank again (a new blank file in place of one with another link). With `keepEmptyParts` (nothing of the last job runs any more),
 * its empty folders and logs stay for the next attempt (EMPTY_PARTS_KEPT).
 */
export function emptyForReuse(dir: string, keepEmptyParts = false): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (
      keepEmptyParts &&
      (EMPTY_PARTS_KEPT as readonly string[]).includes(entry.name) &&
      isEmptyPart(path, entry.isDirectory())
    )
      continue;
    const kept = (KEPT_FILES as readonly string[]).includes(entry.name);
    if (!kept || !entry.isFile()) {
      remove(path, entry.isDirectory());
      continue;
    }
    // Written blank in place; one with another link is replaced by a new file (writeInPlace).
    if (entry.name === "pid" || entry.name === "exit") {
      writeInPlace(path, BLANK_RECORD);
      continue;
    }
    if (lstatSync(path).nlink !== 1) remove(path, false);
  }
}

/**
 * Removes a file or folder: most are a file or an empty folder, each gone in one call; a folder the
 * job filled goes by the recursive removal.
 */
function remove(path: string, isDirectory: boolean): void {
  try {
    if (isDirectory) rmdirSync(path);
    else unlinkSync(path);
  } catch {
    rmSync(path, { recursive: true, force: true });
  }
}

export class SpareFolders {
  readonly #root: string;
  readonly #max: number;
  readonly #spares: string[] = [];
  #named = 0;

  constructor(workDir: string, max = SPARE_FOLDERS_MAX) {
    this.#root = join(workDir, "spare");
    this.#max = max;
  }

  /** Takes up the folders an earlier run of the agent kept, emptied again (it may have stopped midway). */
  load(): void {
    mkdirSync(this.#root, { recursive: true, mode: 0o700 });
    for (const name of readdirSync(this.#root)) {
      const dir = join(this.#root, name);
      if (this.#spares.length >= this.#max || !lstatSync(dir).isDirectory()) {
        rmSync(dir, { recursive: true, force: true });
        continue;
      }
      emptyForReuse(dir);
      this.#spares.push(dir);
    }
  }

  get size(): number {
    return this.#spares.length;
  }

  /**
   * Moves a kept folder to `dir` with `startJson` written in it first (a restarted agent must never
   * find an earlier attempt's start.json there), or returns false when none is kept.
   */
  reuseAs(dir: string, startJson: string): boolean {
    const spare = this.#spares.pop();
    if (spare === undefined) return false;
    try {
      writeInPlace(join(spare, "start.json"), startJson);
      renameSync(spare, dir);
      return true;
    } catch {
      // Not usable (removed by hand, the disk full): a new folder then.
      rmSync(spare, { recursive: true, force: true });
      return false;
    }
  }

  /**
   * Takes an ended attempt's folder out of attempts/ (at once, in one rename) and keeps it emptied,
   * or removes it when enough are kept. `nothingLeft`: no process of the attempt's job can still
   * hold a part of it (its cgroup was seen empty), so its empty parts may stay.
   */
  retire(dir: string, nothingLeft = false): void {
    if (this.#spares.length >= this.#max) {
      removeOwnAttemptFolder(dir);
      return;
    }
    const spare = join(this.#root, `${basename(dir)}.${this.#named++}`);
    renameSync(dir, spare);
    emptyForReuse(spare, nothingLeft);
    this.#spares.push(spare);
  }
}
