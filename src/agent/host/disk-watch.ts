// The agent's watch on its work folder's free space, read at every heartbeat (and hello): below the
// threshold (disk-space.ts) the content cache gives back its least recently used objects first, and
// only if the folder is still full does the host say so (its `diskFull` fact) and refuse attempts
// sent meanwhile. Each change is logged once, with the folder and the numbers.

import { statfs } from "node:fs/promises";
import type { Logger } from "pino";
import { DiskFullError, type DiskSpace, diskFullThresholdBytes, diskIsFull } from "./disk-space.ts";

const MIB = 1024 * 1024;

/** What the host facts say of the work folder's space. */
export interface DiskReading {
  /** MiB free (`host.diskFreeMb`). */
  freeMb: number;
  /** Whether the folder is full: the host takes no new work (`host.diskFull`). */
  full: boolean;
  /** The free space below which it is full, MiB, rounded up (`host.diskMinFreeMb`). */
  minFreeMb: number;
}

/** What the watch asks of the content cache: to give back `bytes` (least recently used first). */
export interface ReleasableCache {
  /** Evicts unpinned objects until `bytes` are freed or none is left; the bytes freed. */
  release(bytes: number): number;
}

export class DiskWatch {
  readonly #workDir: string;
  readonly #cache: ReleasableCache;
  readonly #minFreeMb: number | undefined;
  readonly #log: Logger;
  #last: DiskReading | null = null;

  /** `minFreeMb`: the agent's `--min-free-disk-mb` (absent: the default rule). */
  constructor(workDir: string, cache: ReleasableCache, minFreeMb: number | undefined, log: Logger) {
    this.#workDir = workDir;
    this.#cache = cache;
    this.#minFreeMb = minFreeMb;
    this.#log = log;
  }

  /**
   * Measures the folder's free space; below the threshold, the cache gives back enough for twice
   * the threshold to be free (so that the next attempt's files do not bring it back at once) and
   * the folder is measured again. A folder that cannot be measured reads as 0 MiB free, not full.
   */
  async read(): Promise<DiskReading> {
    let space = await this.#measure();
    if (space === null) return { freeMb: 0, full: false, minFreeMb: 0 };
    const threshold = diskFullThresholdBytes(space.sizeBytes, this.#minFreeMb);
    if (space.freeBytes < threshold) {
      const freed = this.#cache.release(2 * threshold - space.freeBytes);
      if (freed > 0) {
        this.#log.info(
          { freedMb: Math.round(freed / MIB) },
          "work folder nearly full: the content cache gave back space",
        );
        space = (await this.#measure()) ?? space;
      }
    }
    const reading: DiskReading = {
      freeMb: Math.floor(space.freeBytes / MIB),
      full: diskIsFull(space, this.#minFreeMb),
      minFreeMb: Math.ceil(threshold / MIB),
    };
    if (reading.full !== (this.#last?.full ?? false)) this.#logChange(reading);
    this.#last = reading;
    return reading;
  }

  /** Throws a DiskFullError naming the folder when the last reading found it full. */
  refuseWhenFull(): void {
    const last = this.#last;
    if (last?.full) throw new DiskFullError(this.#workDir, last.freeMb, last.minFreeMb);
  }

  async #measure(): Promise<DiskSpace | null> {
    try {
      const info = await statfs(this.#workDir);
      return { freeBytes: info.bavail * info.bsize, sizeBytes: info.blocks * info.bsize };
    } catch {
      // The work folder may not exist yet: no free disk reported, rather than a failed heartbeat.
      return null;
    }
  }

  #logChange(reading: DiskReading): void {
    const numbers = { workDir: this.#workDir, freeMb: reading.freeMb, minFreeMb: reading.minFreeMb };
    if (reading.full)
      this.#log.warn(numbers, "work folder full: this host takes no new work until space is freed");
    else this.#log.info(numbers, "work folder has room again: this host takes work");
  }
}
