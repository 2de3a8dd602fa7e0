// When an agent's work folder counts as full: 256 MiB free, or 1 % of a small file system, or the
// agent's --min-free-disk-mb; and what a staging failure for want of space says.

import { describe, expect, it } from "vitest";
import {
  DISK_FULL_MIN_FREE_FRACTION,
  DISK_FULL_MIN_FREE_MB,
  DiskFullError,
  diskFullThresholdBytes,
  diskIsFull,
  stagingFailure,
} from "../../../../src/agent/host/disk-space.ts";

const MIB = 1024 * 1024;
const GIB = 1024 * MIB;

describe("the threshold of a full work folder", () => {
  it("is 256 MiB, or 1 % of a file system smaller than 25.6 GiB, or the flag's", () => {
    expect(DISK_FULL_MIN_FREE_MB).toBe(256);
    expect(DISK_FULL_MIN_FREE_FRACTION).toBe(0.01);
    const cases: [string, number, number | undefined, number][] = [
      ["a terabyte", 1024 * GIB, undefined, 256 * MIB],
      ["25.6 GiB: both rules agree", 25.6 * GIB, undefined, 256 * MIB],
      ["10 GiB", 10 * GIB, undefined, Math.floor(10 * GIB * 0.01)],
      ["a 48 MiB file system", 48 * MIB, undefined, Math.floor(48 * MIB * 0.01)],
      ["the flag over the rule", 1024 * GIB, 1000, 1000 * MIB],
      ["the flag on a small file system", 48 * MIB, 2, 2 * MIB],
      ["the flag at 0: never full", 48 * MIB, 0, 0],
    ];
    for (const [what, size, flag, threshold] of cases)
      expect(diskFullThresholdBytes(size, flag), what).toBe(threshold);
  });

  it("is full below the threshold, not at it", () => {
    const size = 1024 * GIB;
    const cases: [number, number | undefined, boolean][] = [
      [256 * MIB - 1, undefined, true],
      [256 * MIB, undefined, false],
      [0, undefined, true],
      [10 * GIB, undefined, false],
      [999 * MIB, 1000, true],
      [1000 * MIB, 1000, false],
      [0, 0, false],
    ];
    for (const [free, flag, full] of cases)
      expect(diskIsFull({ freeBytes: free, sizeBytes: size }, flag), `${free} free, flag ${flag}`).toBe(full);
  });
});

describe("stagingFailure", () => {
  it("names the work folder for want of space, and leaves other errors as they say", () => {
    const errno = (code: string) =>
      Object.assign(new Error(`${code}: no space left on device, write`), { code });
    expect(stagingFailure(errno("ENOSPC"), "/var/lib/steward/agent/h1")).toBe(
      "no space left in the work folder /var/lib/steward/agent/h1 (ENOSPC)",
    );
    expect(stagingFailure(errno("EDQUOT"), "/w")).toBe("no space left in the work folder /w (EDQUOT)");
    expect(stagingFailure(new DiskFullError("/w", 3, 256), "/w")).toBe(
      "the work folder /w is full: 3 MB free, under the 256 MB this agent keeps free",
    );
    expect(stagingFailure(errno("EACCES"), "/w")).toBe("EACCES: no space left on device, write");
    expect(stagingFailure(new Error("HEAD input grid: HTTP 404"), "/w")).toBe("HEAD input grid: HTTP 404");
    expect(stagingFailure("text", "/w")).toBe("text");
  });
});
