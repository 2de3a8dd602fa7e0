// The files of the attempts' cgroups, kept open. A kept cgroup (spare-cgroups.ts) is read and
// reset at every attempt's end: its out-of-memory count, its processes, its CPU time, its peak and
// charged memory. One read of an open file (at offset 0: the kernel makes its text anew for each
// read from the start) took a quarter of the time of opening, reading and closing it (1.5 against
// 6.4 µs, an ad hoc measurement on a v1 cpuacct file). A file whose cgroup was
// removed answers ENODEV: it is opened again, or the read answers null as for a file not there.
// cgroup.procs is never kept open: cgroup v1 keeps the list of pids an open file read first, and
// answers it again to later reads of that file (for a second), not the processes there now.

import { closeSync, constants, openSync, readSync, writeSync } from "node:fs";

/** How many files are kept open at most (a kept cgroup has a few; the agent keeps 64 cgroups at most). */
export const CGROUP_FILES_MAX = 1024;

// Node opens every file close-on-exec: the jobs the launcher starts inherit none of them.
const { O_RDONLY, O_WRONLY } = constants;

export class CgroupFiles {
  readonly #readers = new Map<string, number>();
  readonly #writers = new Map<string, number>();
  readonly #max: number;
  readonly #buffer = Buffer.alloc(64 * 1024);

  constructor(max = CGROUP_FILES_MAX) {
    this.#max = max;
  }

  /** The file's text, or null when it cannot be read (no such file, its cgroup removed). */
  read(path: string): string | null {
    if (path.endsWith("/cgroup.procs")) return this.#readOnce(path);
    for (let attempt = 0; attempt < 2; attempt++) {
      const fd = this.#fd(this.#readers, path, O_RDONLY);
      if (fd === null) return null;
      try {
        return this.#readAll(fd);
      } catch {
        // Its cgroup was removed (and perhaps made again): a new open, once.
        this.#drop(this.#readers, path);
      }
    }
    return null;
  }

  /** Writes `value` to the file; throws as writeFileSync does (the caller says which file it could not set). */
  write(path: string, value: string): void {
    for (let attempt = 0; ; attempt++) {
      // Not open yet: opened here, and a failure to open (no such file) thrown as it is.
      const fd = this.#writers.get(path) ?? this.#open(this.#writers, path, O_WRONLY);
      try {
        writeSync(fd, value, 0);
        return;
      } catch (error) {
        this.#drop(this.#writers, path);
        // A value the kernel refuses throws at once; a stale file is opened again, once.
        if (attempt > 0 || (error as NodeJS.ErrnoException).code !== "ENODEV") throw error;
      }
    }
  }

  /** Closes the files of the cgroup directories `dirs` (they are being removed). */
  closeUnder(dirs: readonly string[]): void {
    for (const files of [this.#readers, this.#writers])
      for (const path of [...files.keys()])
        if (dirs.some((dir) => path.startsWith(`${dir}/`))) this.#drop(files, path);
  }

  /** Closes every file. */
  closeAll(): void {
    for (const files of [this.#readers, this.#writers])
      for (const path of [...files.keys()]) this.#drop(files, path);
  }

  /** How many files are open (for tests). */
  get size(): number {
    return this.#readers.size + this.#writers.size;
  }

  #fd(files: Map<string, number>, path: string, mode: number): number | null {
    try {
      return files.get(path) ?? this.#open(files, path, mode);
    } catch {
      return null;
    }
  }

  /** Opens the file and keeps it (every file closed first at the limit); throws what the open throws. */
  #open(files: Map<string, number>, path: string, mode: number): number {
    if (this.#readers.size + this.#writers.size >= this.#max) this.closeAll();
    const fd = openSync(path, mode);
    files.set(path, fd);
    return fd;
  }

  #readOnce(path: string): string | null {
    let fd: number;
    try {
      fd = openSync(path, O_RDONLY);
    } catch {
      return null;
    }
    try {
      return this.#readAll(fd);
    } catch {
      return null;
    } finally {
      closeSync(fd);
    }
  }

  #readAll(fd: number): string {
    const buffer = this.#buffer;
    let length = readSync(fd, buffer, 0, buffer.length, 0);
    if (length < buffer.length) return buffer.toString("latin1", 0, length);
    // A long one (cgroup.procs of a job with many processes): read on to its end.
    const parts = [Buffer.from(buffer.subarray(0, length))];
    let offset = length;
    for (;;) {
      length = readSync(fd, buffer, 0, buffer.length, offset);
      if (length === 0) break;
      parts.push(Buffer.from(buffer.subarray(0, length)));
      offset += length;
    }
    return Buffer.concat(parts).toString("latin1");
  }

  #drop(files: Map<string, number>, path: string): void {
    const fd = files.get(path);
    files.delete(path);
    if (fd === undefined) return;
    try {
      closeSync(fd);
    } catch {}
  }
}

/** The agent process's open cgroup files (every agent of a process shares it: paths are unique). */
export const cgroupFiles = new CgroupFiles();
