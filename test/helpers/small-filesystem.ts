// A small file system of a test's own, to fill up and free again: a tmpfs of a few MiB mounted on a
// temporary folder (root only). Under CI the tests that need one fail when it cannot be mounted;
// elsewhere they are skipped with a message saying why.

import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "vitest";

let unavailable: string | null | undefined;

/** Why a tmpfs cannot be mounted here (not root, mount refused), or null; found once. */
export function smallFilesystemUnavailable(): string | null {
  if (unavailable === undefined) unavailable = mountRefusal();
  return unavailable;
}

function mountRefusal(): string | null {
  if (process.getuid?.() !== 0) return "not root";
  try {
    SmallFilesystem.mount(1, "steward-tmpfs-check-").unmount();
    return null;
  } catch (error) {
    return `mount -t tmpfs failed: ${error instanceof Error ? error.message.split("\n")[0] : error}`;
  }
}

/**
 * The full-disk tests' gate: `body` (a describe block named `title`) where a tmpfs can be mounted;
 * else, under CI, a test that fails saying why, and elsewhere a skip with a message naming `what`.
 */
export function describeSmallFilesystem(what: string, title: string, body: () => void): void {
  const why = smallFilesystemUnavailable();
  if (why && process.env.CI) {
    test("a small file system can be mounted (root, tmpfs)", () => {
      throw new Error(`the full-disk tests mount a tmpfs: ${why}`);
    });
  } else if (why) {
    console.warn(`skipping ${what}: ${why}`);
    test.skip(`small file system: ${why}`, () => {});
  } else describe(title, body);
}

const MIB = 1024 * 1024;

export class SmallFilesystem {
  /** Where it is mounted. */
  readonly dir: string;
  #fillers = 0;

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** A tmpfs of `sizeMb` MiB on a new temporary folder. */
  static mount(sizeMb: number, prefix = "steward-tmpfs-"): SmallFilesystem {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m,mode=0755`, "tmpfs", dir], {
        stdio: ["ignore", "ignore", "pipe"],
      });
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    return new SmallFilesystem(dir);
  }

  /** Bytes free for an unprivileged writer (statfs). */
  freeBytes(): number {
    const info = statfsSync(this.dir);
    return info.bavail * info.bsize;
  }

  /**
   * Fills it up with a file of its own (filler-N at its top) until a write is refused (ENOSPC), or
   * until only `leaveBytes` are free; returns the filler's path.
   */
  fill(leaveBytes = 0): string {
    const path = join(this.dir, `filler-${++this.#fillers}`);
    const fd = openSync(path, "w");
    try {
      for (const chunk of [MIB, 64 * 1024, 4096]) {
        const buffer = Buffer.alloc(chunk, 0x55);
        for (;;) {
          const room = this.freeBytes() - leaveBytes;
          if (room <= 0) return path;
          try {
            writeSync(fd, buffer, 0, Math.min(chunk, room));
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
            break;
          }
        }
      }
      return path;
    } finally {
      closeSync(fd);
    }
  }

  /** Removes the fillers: the space they took is free again. */
  free(): void {
    for (let i = 1; i <= this.#fillers; i++) rmSync(join(this.dir, `filler-${i}`), { force: true });
  }

  /** Unmounts it (lazily if a process still holds a file there) and removes its folder. */
  unmount(): void {
    try {
      execFileSync("umount", [this.dir], { stdio: ["ignore", "ignore", "pipe"] });
    } catch {
      execFileSync("umount", ["-l", this.dir], { stdio: ["ignore", "ignore", "pipe"] });
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
