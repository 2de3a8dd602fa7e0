import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { BlobNotFoundError } from "../../src/store/blobs.ts";
import { DiskBlobStore } from "../../src/store/disk-blobs.ts";

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

  test("an empty blob", async () => {
    expect(await blobs.write("empty", Readable.from([]))).toStrictEqual({ key: "empty", bytes: 0 });
    expect(await text(blobs.read("empty"))).toBe("");
  });

  test("write replaces a blob", async () => {
    await blobs.write("a/b", chunks("old old old"));
    await blobs.write("a/b", chunks("new"));
    expect(await text(blobs.read("a/b"))).toBe("new");
    expect(await blobs.stat("a/b")).toStrictEqual({ key: "a/b", bytes: 3 });
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

  test("list: blobs under a folder, keys relative to the store, sorted", async () => {
    for (const key of [
      "jobs/2/out/b",
      "jobs/1/out/z",
      "jobs/1/out/a/deep",
      "jobs/10/x",
      "jobs/1/in",
      "other",
    ]) {
      await blobs.write(key, chunks(key));
    }
    const keys = (infos: { key: string }[]) => infos.map((info) => info.key);
    expect(keys(await blobs.list("jobs/1"))).toStrictEqual([
      "jobs/1/in",
      "jobs/1/out/a/deep",
      "jobs/1/out/z",
    ]);
    expect(keys(await blobs.list("jobs/1/"))).toStrictEqual([
      "jobs/1/in",
      "jobs/1/out/a/deep",
      "jobs/1/out/z",
    ]);
    expect(await blobs.list("jobs/1/out/z")).toStrictEqual([{ key: "jobs/1/out/z", bytes: 12 }]);
    expect(keys(await blobs.list(""))).toStrictEqual([
      "jobs/1/in",
      "jobs/1/out/a/deep",
      "jobs/1/out/z",
      "jobs/10/x",
      "jobs/2/out/b",
      "other",
    ]);
    expect(await blobs.list("jobs/3")).toStrictEqual([]);
    expect(await blobs.list("other/below")).toStrictEqual([]);
    expect((await blobs.list("jobs/2")).map((info) => info.bytes)).toStrictEqual([12]);
  });

  test("list on a store that does not exist yet is empty", async () => {
    expect(await blobs.list("")).toStrictEqual([]);
  });

  test("deletePrefix removes a folder, or a single blob, and nothing else", async () => {
    for (const key of ["jobs/1/a", "jobs/1/b/c", "jobs/10/a", "jobs/2/a"])
      await blobs.write(key, chunks("x"));
    await blobs.deletePrefix("jobs/1");
    expect((await blobs.list("")).map((info) => info.key)).toStrictEqual(["jobs/10/a", "jobs/2/a"]);
    await blobs.deletePrefix("jobs/2/a");
    expect((await blobs.list("")).map((info) => info.key)).toStrictEqual(["jobs/10/a"]);
    await blobs.deletePrefix("jobs/never");
    await expect(blobs.deletePrefix("")).rejects.toThrow();
    expect((await blobs.list("")).map((info) => info.key)).toStrictEqual(["jobs/10/a"]);
  });

  describe("append", () => {
    test("appends at the current size and returns the new size", async () => {
      expect(await blobs.append("logs/out", 0, Buffer.from("abc"))).toBe(3);
      expect(await blobs.append("logs/out", 3, Buffer.from("def"))).toBe(6);
      expect(await blobs.append("logs/out", 6, Buffer.alloc(0))).toBe(6);
      expect(await text(blobs.read("logs/out"))).toBe("abcdef");
    });

    test("a resend of bytes already there is a no-op returning the current size", async () => {
      await blobs.append("log", 0, Buffer.from("abc"));
      await blobs.append("log", 3, Buffer.from("def"));
      expect(await blobs.append("log", 3, Buffer.from("def"))).toBe(6);
      expect(await blobs.append("log", 0, Buffer.from("abc"))).toBe(6);
      expect(await blobs.append("log", 2, Buffer.from("cd"))).toBe(6);
      expect(await text(blobs.read("log"))).toBe("abcdef");
    });

    test("a resend that runs past the end appends only the new part", async () => {
      await blobs.append("log", 0, Buffer.from("abcd"));
      expect(await blobs.append("log", 2, Buffer.from("cdef"))).toBe(6);
      expect(await text(blobs.read("log"))).toBe("abcdef");
    });

    test("a resend that differs from what is there is refused", async () => {
      await blobs.append("log", 0, Buffer.from("abcdef"));
      await expect(blobs.append("log", 3, Buffer.from("XYZ"))).rejects.toThrow(/differs/);
      await expect(blobs.append("log", 4, Buffer.from("eX!"))).rejects.toThrow(/differs/);
      expect(await text(blobs.read("log"))).toBe("abcdef");
    });

    test("an offset past the end is refused and writes nothing", async () => {
      await blobs.append("log", 0, Buffer.from("abc"));
      await expect(blobs.append("log", 4, Buffer.from("x"))).rejects.toThrow();
      await expect(blobs.append("new/log", 1, Buffer.from("x"))).rejects.toThrow();
      await expect(blobs.append("log", -1, Buffer.from("x"))).rejects.toThrow();
      expect(await text(blobs.read("log"))).toBe("abc");
      expect(await blobs.stat("new/log")).toBeNull();
    });

    test("concurrent appends to one blob are applied one at a time", async () => {
      const results = await Promise.all([
        blobs.append("log", 0, Buffer.from("aaa")),
        blobs.append("log", 3, Buffer.from("bbb")),
        blobs.append("log", 0, Buffer.from("aaa")),
        blobs.append("log", 6, Buffer.from("ccc")),
      ]);
      expect(results).toStrictEqual([3, 6, 6, 9]);
      expect(await text(blobs.read("log"))).toBe("aaabbbccc");
    });

    test("append after write continues the written blob", async () => {
      await blobs.write("log", chunks("abc"));
      expect(await blobs.append("log", 3, Buffer.from("d"))).toBe(4);
      expect(await text(blobs.read("log"))).toBe("abcd");
    });
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

    test("a refused write does not leave its source stream hanging", async () => {
      const source = chunks("x");
      await expect(blobs.write("../x", source)).rejects.toThrow();
      expect(source.destroyed).toBe(true);
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
