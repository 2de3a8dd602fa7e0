// The agent's watch on its work folder, on a small file system of the test's own: full below the
// threshold, after the content cache gave back what it could; refusing attempts while full; room
// again once space is freed; each change logged once.

import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, expect, it } from "vitest";
import { DiskFullError } from "../../../../src/agent/host/disk-space.ts";
import { DiskWatch, type ReleasableCache } from "../../../../src/agent/host/disk-watch.ts";
import { describeSmallFilesystem, SmallFilesystem } from "../../../helpers/small-filesystem.ts";

const MIB = 1024 * 1024;

/** A cache that holds one file on the file system, and gives it back when asked. */
class OneFileCache implements ReleasableCache {
  readonly asked: number[] = [];
  readonly path: string | null;
  held: number;

  constructor(path: string | null, bytes: number) {
    this.path = path;
    this.held = bytes;
    if (path) writeFileSync(path, Buffer.alloc(bytes, 1));
  }

  release(bytes: number): number {
    this.asked.push(bytes);
    if (this.held === 0 || !this.path) return 0;
    rmSync(this.path);
    const freed = this.held;
    this.held = 0;
    return freed;
  }
}

function recordingLog() {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, messages: () => lines.map((line) => line.msg) };
}

describeSmallFilesystem("the disk watch's tests", "DiskWatch on a small file system", () => {
  let disk: SmallFilesystem;
  let work: string;

  beforeEach(() => {
    disk = SmallFilesystem.mount(16);
    work = disk.dir;
  });

  afterEach(() => {
    disk.unmount();
  });

  it("is full once the folder fills up with nothing to give back, refuses attempts, and has room again once freed", async () => {
    const cache = new OneFileCache(null, 0);
    const { log, messages } = recordingLog();
    const watch = new DiskWatch(work, cache, undefined, log);
    const roomy = await watch.read();
    // 1 % of 16 MiB, rounded up to a whole MiB.
    expect(roomy).toMatchObject({ full: false, minFreeMb: 1 });
    expect(roomy.freeMb).toBeGreaterThanOrEqual(15);
    expect(() => watch.refuseWhenFull()).not.toThrow();
    disk.fill();
    const full = await watch.read();
    expect(full).toStrictEqual({ freeMb: 0, full: true, minFreeMb: 1 });
    // Asked for enough to leave twice the threshold free.
    expect(cache.asked).toStrictEqual([2 * Math.floor(16 * MIB * 0.01)]);
    expect(() => watch.refuseWhenFull()).toThrow(DiskFullError);
    expect(() => watch.refuseWhenFull()).toThrow(
      `the work folder ${work} is full: 0 MB free, under the 1 MB this agent keeps free`,
    );
    await watch.read();
    disk.free();
    expect((await watch.read()).full).toBe(false);
    expect(() => watch.refuseWhenFull()).not.toThrow();
    expect(messages()).toStrictEqual([
      "work folder full: this host takes no new work until space is freed",
      "work folder has room again: this host takes work",
    ]);
  });

  it("has the content cache give back its space before it says the folder is full", async () => {
    const cache = new OneFileCache(join(work, "cached-object"), 2 * MIB);
    const { log, messages } = recordingLog();
    const watch = new DiskWatch(work, cache, undefined, log);
    disk.fill();
    const reading = await watch.read();
    expect(reading.full).toBe(false);
    expect(reading.freeMb).toBeGreaterThanOrEqual(1);
    expect(cache.asked).toHaveLength(1);
    expect(messages()).toStrictEqual(["work folder nearly full: the content cache gave back space"]);
  });

  it("takes the agent's --min-free-disk-mb for its threshold", async () => {
    const watch = new DiskWatch(work, new OneFileCache(null, 0), 8, pino({ level: "silent" }));
    expect(await watch.read()).toMatchObject({ full: false, minFreeMb: 8 });
    disk.fill(6 * MIB);
    expect(await watch.read()).toMatchObject({ full: true, minFreeMb: 8, freeMb: 6 });
  });
});
