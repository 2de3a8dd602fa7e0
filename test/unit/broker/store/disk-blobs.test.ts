// What only DiskBlobStore does: blobs are files at their keys, temporary files never stay, an open
// reader keeps its file through a rename, a missing blob throws at once. The BlobStore behaviour
// every store shares is in test/conformance/blob-suite.ts, run against this store there too.

import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { BlobNotFoundError } from "../../../../src/broker/store/blobs.ts";
import { DiskBlobStore } from "../../../../src/broker/store/disk-blobs.ts";
import { StorageFullError } from "../../../../src/broker/store/storage-full.ts";
import { describeSmallFilesystem, SmallFilesystem } from "../../../helpers/small-filesystem.ts";

/** Every file under a folder, relative, sorted: to see temp files and files outside the store. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

function chunks(...parts: string[]): Readable {
  return Readable.from(parts.map((part) => Buffer.from(part)));
}

/** A stream that sends some bytes and then fails, like an upload whose client went away. */
function failingStream(): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(Buffer.alloc(64 * 1024, 1));
        return;
      }
      setImmediate(() => this.destroy(new Error("connection reset")));
    },
  });
}

describe("DiskBlobStore", () => {
  let outer: string;
  let root: string;
  let blobs: DiskBlobStore;

  beforeEach(async () => {
    outer = await mkdtemp(join(tmpdir(), "steward-blobs-"));
    root = join(outer, "blobs");
    blobs = new DiskBlobStore(root);
  });

  afterEach(async () => {
    await rm(outer, { recursive: true, force: true });
  });

  test("write, stat, read, read from an offset", async () => {
    const info = await blobs.write("jobs/1/inputs/grid", chunks("hello ", "grid ", "✓"));
    expect(info).toStrictEqual({ key: "jobs/1/inputs/grid", bytes: Buffer.byteLength("hello grid ✓") });
    expect(await blobs.stat("jobs/1/inputs/grid")).toStrictEqual(info);
    expect(await text(blobs.read("jobs/1/inputs/grid"))).toBe("hello grid ✓");
    expect(await text(blobs.read("jobs/1/inputs/grid", 6))).toBe("grid ✓");
    expect(await filesUnder(root)).toStrictEqual(["jobs/1/inputs/grid"]);
  });

  test("a large blob streams through", async () => {
    const size = 8 * 1024 * 1024 + 3;
    const data = Buffer.alloc(size);
    for (let i = 0; i < size; i++) data[i] = i % 251;
    const source = Readable.from(
      (function* () {
        for (let at = 0; at < size; at += 65_536) yield data.subarray(at, at + 65_536);
      })(),
    );
    expect(await blobs.write("big", source)).toStrictEqual({ key: "big", bytes: size });
    expect((await readFile(join(root, "big"))).equals(data)).toBe(true);
  });

  test("a reader opened before a replace keeps reading the old blob", async () => {
    await blobs.write("a", chunks("old"));
    const reader = blobs.read("a");
    await blobs.write("a", chunks("new!"));
    expect(await text(reader)).toBe("old");
  });

  test("missing blobs: read throws BlobNotFoundError at once, stat is null", async () => {
    expect(() => blobs.read("nope")).toThrow(BlobNotFoundError);
    expect(() => blobs.read("nope/deeper")).toThrow(BlobNotFoundError);
    expect(await blobs.stat("nope")).toBeNull();
    await blobs.write("folder/file", chunks("x"));
    expect(() => blobs.read("folder")).toThrow(BlobNotFoundError);
    expect(() => blobs.read("folder/file/below")).toThrow(BlobNotFoundError);
    expect(await blobs.stat("folder")).toBeNull();
    expect(await blobs.stat("folder/file/below")).toBeNull();
  });

  describe("keys that leave the store or are not normalised are refused", () => {
    const badKeys = [
      "../escape",
      "a/../../escape",
      "a/..",
      "..",
      "/etc/passwd",
      "a//b",
      "a/./b",
      "./a",
      "a\\b",
      "C:/x",
      "a\0b",
      "",
    ];

    test.each(badKeys)("%j", async (key) => {
      await mkdir(root, { recursive: true });
      await expect(blobs.write(key, chunks("x"))).rejects.toThrow();
      await expect(blobs.append(key, 0, Buffer.from("x"))).rejects.toThrow();
      await expect(blobs.stat(key)).rejects.toThrow();
      expect(() => blobs.read(key)).toThrow(Error);
      if (key !== "") await expect(blobs.list(key)).rejects.toThrow();
      await expect(blobs.deletePrefix(key)).rejects.toThrow();
      expect(await filesUnder(outer)).toStrictEqual([]);
    });

    test("deletePrefix with .. does not touch files outside", async () => {
      await writeFile(join(outer, "precious"), "keep");
      await expect(blobs.deletePrefix("../precious")).rejects.toThrow();
      await expect(blobs.deletePrefix("..")).rejects.toThrow();
      expect(await readFile(join(outer, "precious"), "utf8")).toBe("keep");
    });
  });

  describe("a write that fails midway", () => {
    test("leaves no blob and no temporary file", async () => {
      await expect(blobs.write("jobs/1/outputs/result", failingStream())).rejects.toThrow("connection reset");
      expect(await blobs.stat("jobs/1/outputs/result")).toBeNull();
      expect(() => blobs.read("jobs/1/outputs/result")).toThrow(BlobNotFoundError);
      expect(await blobs.list("")).toStrictEqual([]);
      expect(await filesUnder(root)).toStrictEqual([]);
    });

    test("keeps the blob it was replacing", async () => {
      await blobs.write("result", chunks("the old result"));
      await expect(blobs.write("result", failingStream())).rejects.toThrow("connection reset");
      expect(await text(blobs.read("result"))).toBe("the old result");
      expect(await filesUnder(root)).toStrictEqual(["result"]);
    });
  });
});

describeSmallFilesystem("the blob store's full-disk tests", "DiskBlobStore on a full file system", () => {
  let disk: SmallFilesystem;
  let root: string;
  let blobs: DiskBlobStore;

  beforeEach(() => {
    disk = SmallFilesystem.mount(4);
    root = join(disk.dir, "blobs");
    blobs = new DiskBlobStore(root);
  });

  afterEach(() => {
    disk.unmount();
  });

  test("a write refused for want of space names the folder, leaves no temporary file and keeps the old blob", async () => {
    await blobs.write("jobs/1/inputs/grid", chunks("the old grid"));
    disk.fill();
    const refused = blobs.write("jobs/1/inputs/grid", Readable.from([Buffer.alloc(256 * 1024, 7)]));
    await expect(refused).rejects.toBeInstanceOf(StorageFullError);
    await expect(refused).rejects.toThrow(`no space left for ${root} (no space left on device)`);
    expect(await text(blobs.read("jobs/1/inputs/grid"))).toBe("the old grid");
    expect(await filesUnder(root)).toStrictEqual(["jobs/1/inputs/grid"]);
    disk.free();
    await blobs.write("jobs/1/inputs/grid", chunks("the new grid"));
    expect(await text(blobs.read("jobs/1/inputs/grid"))).toBe("the new grid");
  });

  test("an append refused half-way is cut back to where it began, and goes in whole once space is freed", async () => {
    await blobs.append("jobs/1/logs/out", 0, Buffer.from("before\n"));
    // Room for part of the append: some of it goes in before the disk is full.
    disk.fill(64 * 1024);
    const data = Buffer.alloc(512 * 1024, 0x61);
    const refused = blobs.append("jobs/1/logs/out", 7, data);
    await expect(refused).rejects.toBeInstanceOf(StorageFullError);
    expect(await blobs.stat("jobs/1/logs/out")).toStrictEqual({ key: "jobs/1/logs/out", bytes: 7 });
    disk.free();
    expect(await blobs.append("jobs/1/logs/out", 7, data)).toBe(7 + data.byteLength);
    expect((await text(blobs.read("jobs/1/logs/out"))).slice(0, 8)).toBe("before\na");
  });
});
