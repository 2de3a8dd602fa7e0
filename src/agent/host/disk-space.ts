// When an agent's work folder counts as full: the rule, its constants, and what a staging failure
// for want of space says. A host whose folder is full takes no new work (its `diskFull` fact, which
// the scheduler's feasibility stage `workFolderHasRoom` reads and `steward explain` names), until
// space is freed; the content cache gives back what it holds first (disk-watch.ts).

/** A work folder with less free than this (MiB) is full: room for a few attempts' inputs and logs. */
export const DISK_FULL_MIN_FREE_MB = 256;
/** ...or, on a file system smaller than 25.6 GiB, less than this fraction of its size. */
export const DISK_FULL_MIN_FREE_FRACTION = 0.01;

const MIB = 1024 * 1024;

/** What statfs says of the work folder's file system, in bytes. */
export interface DiskSpace {
  /** Free for an unprivileged writer (f_bavail). */
  freeBytes: number;
  /** The file system's size (f_blocks). */
  sizeBytes: number;
}

/**
 * The free space (bytes) below which a work folder is full: `minFreeMb` when given (the agent's
 * `--min-free-disk-mb`), else DISK_FULL_MIN_FREE_MB, or DISK_FULL_MIN_FREE_FRACTION of the file
 * system when that is less (a small file system is not full for ever).
 */
export function diskFullThresholdBytes(sizeBytes: number, minFreeMb?: number): number {
  if (minFreeMb !== undefined) return minFreeMb * MIB;
  return Math.min(DISK_FULL_MIN_FREE_MB * MIB, Math.floor(sizeBytes * DISK_FULL_MIN_FREE_FRACTION));
}

/** Whether the work folder is full: less free than its threshold. */
export function diskIsFull(space: DiskSpace, minFreeMb?: number): boolean {
  return space.freeBytes < diskFullThresholdBytes(space.sizeBytes, minFreeMb);
}

/** The errno codes of a full file system, and of a quota used up. */
const FULL_ERRNO_CODES: readonly string[] = ["ENOSPC", "EDQUOT"];

/**
 * Why staging an attempt failed, as its reason says it: for want of space, the work folder named
 * (its ENOSPC or EDQUOT), not the job's fault; otherwise the error's own message.
 */
export function stagingFailure(error: unknown, workDir: string): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && FULL_ERRNO_CODES.includes(code))
    return `no space left in the work folder ${workDir} (${code})`;
  if (error instanceof DiskFullError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

/** An attempt refused before staging: the work folder is full (disk-watch.ts). */
export class DiskFullError extends Error {
  constructor(workDir: string, freeMb: number, minFreeMb: number) {
    super(
      `the work folder ${workDir} is full: ${freeMb} MB free, under the ${minFreeMb} MB this agent keeps free`,
    );
    this.name = "DiskFullError";
  }
}
