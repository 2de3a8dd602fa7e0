// `steward run --stdout FILE --stderr FILE`: the job's output, as run streams it to the terminal,
// written to files on the submitting machine too (the log file per job a workflow engine expects).
// The files are opened (made, or emptied) before the job is submitted, so a path that cannot be
// written is refused with no job made; each chunk is written at once, so what reached the terminal
// is in the file even when run is stopped (Ctrl-C exits at once).

import { closeSync, openSync, writeSync } from "node:fs";
import { resolve } from "node:path";
import { CliError } from "../common/command-line/cli-error.ts";

export type OutputStream = "stdout" | "stderr";

/** The files asked for, by stream. */
export type OutputPaths = Partial<Record<OutputStream, string>>;

/**
 * Why these flags cannot go together, or null: the files are written by run as it follows the
 * job, and --detach does not follow it.
 */
export function outputFilesConflict(paths: OutputPaths, detach: boolean): string | null {
  const given = (["stdout", "stderr"] as const).filter((stream) => paths[stream] !== undefined);
  if (!detach || given.length === 0) return null;
  return `${given.map((stream) => `--${stream}`).join(" and ")} ${given.length === 1 ? "is" : "are"} written by run as it follows the job, and --detach does not follow it: once the job has ended, steward logs ID > FILE (and steward logs --stderr ID) writes the same`;
}

/** Open files, each stream's chunks written to its own (one file for both when they name the same path). */
export class OutputFiles {
  readonly #fds: Partial<Record<OutputStream, number>>;

  private constructor(fds: Partial<Record<OutputStream, number>>) {
    this.#fds = fds;
  }

  /** Opens (makes or empties) the files of `paths`; one that cannot be opened is refused (exit 2) naming it. */
  static open(paths: OutputPaths): OutputFiles {
    const fds: Partial<Record<OutputStream, number>> = {};
    const opened = new Map<string, number>();
    try {
      for (const stream of ["stdout", "stderr"] as const) {
        const path = paths[stream];
        if (path === undefined) continue;
        const full = resolve(path);
        let fd = opened.get(full);
        if (fd === undefined) {
          try {
            fd = openSync(full, "w", 0o666);
          } catch (error) {
            throw new CliError(`--${stream} ${path}: ${(error as Error).message}`, 2);
          }
          opened.set(full, fd);
        }
        fds[stream] = fd;
      }
    } catch (error) {
      for (const fd of opened.values()) closeSync(fd);
      throw error;
    }
    return new OutputFiles(fds);
  }

  /** Writes a chunk of `stream` to its file, if it has one. */
  write(stream: OutputStream, chunk: Uint8Array | string): void {
    const fd = this.#fds[stream];
    if (fd === undefined) return;
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
  }

  close(): void {
    for (const fd of new Set(Object.values(this.#fds))) closeSync(fd);
  }
}
