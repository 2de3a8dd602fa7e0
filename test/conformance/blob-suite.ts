// The BlobStore conformance suite, like the Store's (store-suite.ts): every BlobStore calls
// describeBlobConformance and must pass all of it. It pins down what the server relies on: exact
// bytes through streams, reads from an offset, writes that readers see whole or not at all,
// idempotent appends, folder semantics of prefixes, key checks, and memory that stays bounded
// whatever the size of a blob.

import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { BlobNotFoundError, type BlobStore } from "../../src/broker/store/blobs.ts";

export interface BlobStoreUnderTest {
  /** A store on fresh, empty data. */
  blobs: BlobStore;
  /** Another store on the same data, as a second broker would have. */
  another: () => BlobStore;
  /** Closes what the factory made and removes the data. */
  cleanup: () => Promise<void>;
}

export function chunks(...parts: string[]): Readable {
  return Readable.from(parts.map((part) => Buffer.from(part)));
}

/** A stream that sends some bytes and then fails, like an upload whose client went away. */
export function failingStream(): Readable {
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

/** The blob's bytes as text; a read that throws at once rejects, as one that fails later does. */
export async function readText(blobs: BlobStore, key: string, offset?: number): Promise<string> {
  return text(blobs.read(key, offset));
}

async function readBuffer(blobs: BlobStore, key: string, offset?: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of blobs.read(key, offset)) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

const keys = (infos: { key: string }[]) => infos.map((info) => info.key);

// A garbage collection on demand, to measure what a transfer keeps alive rather than what the
// collector has not got round to yet.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

/** Heap plus Buffers, after a collection, and another once Buffers freed by the first are released. */
async function liveBytes(): Promise<number> {
  collectGarbage();
  await new Promise((resolve) => setTimeout(resolve, 1));
  collectGarbage();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

const PIECE = 64 * 1024;

/** Byte i of the big test blob: varies with i, so a misplaced chunk shows. */
function patternPiece(index: number, length: number): Buffer {
  const piece = Buffer.alloc(length);
  for (let i = 0; i < length; i++) piece[i] = (index * 7 + i * 13 + (i >> 9)) & 255;
  return piece;
}

/** `size` bytes of the pattern in 64 KiB pieces made as they are pulled; awaits `sample` every MiB. */
function patternStream(size: number, sample: () => Promise<void>): Readable {
  return Readable.from(
    (async function* () {
      for (let at = 0, index = 0; at < size; at += PIECE, index++) {
        if (at % (1024 * 1024) === 0) await sample();
        yield patternPiece(index, Math.min(PIECE, size - at));
      }
    })(),
    { objectMode: false },
  );
}

function patternHash(size: number, from = 0): string {
  const hash = createHash("sha256");
  for (let at = 0, index = 0; at < size; at += PIECE, index++) {
    const piece = patternPiece(index, Math.min(PIECE, size - at));
    if (at + piece.byteLength <= from) continue;
    hash.update(piece.subarray(Math.max(0, from - at)));
  }
  return hash.digest("hex");
}

export function describeBlobConformance(name: string, make: () => Promise<BlobStoreUnderTest>): void {
  describe(`BlobStore conformance: ${name}`, () => {
    let under: BlobStoreUnderTest;
    let blobs: BlobStore;

    beforeEach(async () => {
      under = await make();
      blobs = under.blobs;
    });

    afterEach(async () => {
      await under.cleanup();
    });

    test("write, stat, read, read from an offset", async () => {
      const info = await blobs.write("jobs/1/inputs/grid", chunks("hello ", "grid ", "✓"));
      expect(info).toStrictEqual({ key: "jobs/1/inputs/grid", bytes: Buffer.byteLength("hello grid ✓") });
      expect(await blobs.stat("jobs/1/inputs/grid")).toStrictEqual(info);
      expect(await readText(blobs, "jobs/1/inputs/grid")).toBe("hello grid ✓");
      expect(await readText(blobs, "jobs/1/inputs/grid", 6)).toBe("grid ✓");
      expect(await readText(blobs, "jobs/1/inputs/grid", info.bytes)).toBe("");
    });

    test("an empty blob", async () => {
      expect(await blobs.write("empty", Readable.from([]))).toStrictEqual({ key: "empty", bytes: 0 });
      expect(await readText(blobs, "empty")).toBe("");
    });

    test("write replaces a blob", async () => {
      await blobs.write("a/b", chunks("old old old"));
      await blobs.write("a/b", chunks("new"));
      expect(await readText(blobs, "a/b")).toBe("new");
      expect(await blobs.stat("a/b")).toStrictEqual({ key: "a/b", bytes: 3 });
    });

    test("missing blobs: read fails with BlobNotFoundError, stat is null", async () => {
      await expect(readText(blobs, "nope")).rejects.toThrow(BlobNotFoundError);
      await expect(readText(blobs, "nope/deeper")).rejects.toThrow(BlobNotFoundError);
      expect(await blobs.stat("nope")).toBeNull();
      await blobs.write("folder/file", chunks("x"));
      await expect(readText(blobs, "folder")).rejects.toThrow(BlobNotFoundError);
      await expect(readText(blobs, "folder/file/below")).rejects.toThrow(BlobNotFoundError);
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

    test("a prefix is a folder: neighbours that sort around '/' and LIKE's wildcards are not in it", async () => {
      for (const key of ["a%/x", "a_/x", "ab/x", "jobs/1-x", "jobs/1.x", "jobs/1/x", "jobs/10/x"])
        await blobs.write(key, chunks(key));
      expect(keys(await blobs.list("jobs/1"))).toStrictEqual(["jobs/1/x"]);
      expect(keys(await blobs.list("a_"))).toStrictEqual(["a_/x"]);
      expect(keys(await blobs.list("a%"))).toStrictEqual(["a%/x"]);
      await blobs.deletePrefix("jobs/1");
      await blobs.deletePrefix("a_");
      expect(keys(await blobs.list(""))).toStrictEqual(["a%/x", "ab/x", "jobs/1-x", "jobs/1.x", "jobs/10/x"]);
      await blobs.deletePrefix("jobs/10");
      // A key that was a folder can name a blob once the folder is gone (a file system cannot have both).
      await blobs.write("jobs/1", chunks("blob, not folder"));
      expect(keys(await blobs.list("jobs/1"))).toStrictEqual(["jobs/1"]);
      await blobs.deletePrefix("jobs/1");
      expect(keys(await blobs.list("jobs"))).toStrictEqual(["jobs/1-x", "jobs/1.x"]);
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
      await expect(readText(blobs, "jobs/1/a")).rejects.toThrow(BlobNotFoundError);
      expect(await blobs.stat("jobs/1/b/c")).toBeNull();
    });

    test("a blob written again after a delete is the new one", async () => {
      await blobs.write("jobs/1/a", chunks("first"));
      await blobs.deletePrefix("jobs/1");
      await blobs.write("jobs/1/a", chunks("second"));
      expect(await readText(blobs, "jobs/1/a")).toBe("second");
      expect(await blobs.list("jobs")).toStrictEqual([{ key: "jobs/1/a", bytes: 6 }]);
    });

    describe("append", () => {
      test("appends at the current size and returns the new size", async () => {
        expect(await blobs.append("logs/out", 0, Buffer.from("abc"))).toBe(3);
        expect(await blobs.append("logs/out", 3, Buffer.from("def"))).toBe(6);
        expect(await blobs.append("logs/out", 6, Buffer.alloc(0))).toBe(6);
        expect(await readText(blobs, "logs/out")).toBe("abcdef");
      });

      test("a resend of bytes already there is a no-op returning the current size", async () => {
        await blobs.append("log", 0, Buffer.from("abc"));
        await blobs.append("log", 3, Buffer.from("def"));
        expect(await blobs.append("log", 3, Buffer.from("def"))).toBe(6);
        expect(await blobs.append("log", 0, Buffer.from("abc"))).toBe(6);
        expect(await blobs.append("log", 2, Buffer.from("cd"))).toBe(6);
        expect(await readText(blobs, "log")).toBe("abcdef");
      });

      test("a resend that runs past the end appends only the new part", async () => {
        await blobs.append("log", 0, Buffer.from("abcd"));
        expect(await blobs.append("log", 2, Buffer.from("cdef"))).toBe(6);
        expect(await readText(blobs, "log")).toBe("abcdef");
      });

      test("a resend that differs from what is there is refused", async () => {
        await blobs.append("log", 0, Buffer.from("abcdef"));
        await expect(blobs.append("log", 3, Buffer.from("XYZ"))).rejects.toThrow(/differs/);
        await expect(blobs.append("log", 4, Buffer.from("eX!"))).rejects.toThrow(/differs/);
        expect(await readText(blobs, "log")).toBe("abcdef");
      });

      test("an offset past the end is refused and writes nothing", async () => {
        await blobs.append("log", 0, Buffer.from("abc"));
        await expect(blobs.append("log", 4, Buffer.from("x"))).rejects.toThrow();
        await expect(blobs.append("new/log", 1, Buffer.from("x"))).rejects.toThrow();
        await expect(blobs.append("log", -1, Buffer.from("x"))).rejects.toThrow();
        expect(await readText(blobs, "log")).toBe("abc");
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
        expect(await readText(blobs, "log")).toBe("aaabbbccc");
      });

      test("append after write continues the written blob", async () => {
        await blobs.write("log", chunks("abc"));
        expect(await blobs.append("log", 3, Buffer.from("d"))).toBe(4);
        expect(await readText(blobs, "log")).toBe("abcd");
      });

      test("an empty first append makes an empty blob", async () => {
        expect(await blobs.append("log", 0, Buffer.alloc(0))).toBe(0);
        expect(await blobs.stat("log")).toStrictEqual({ key: "log", bytes: 0 });
      });

      test("many small appends and a large one read back whole and from any offset", async () => {
        const expected: Buffer[] = [];
        let size = 0;
        for (let i = 0; i < 300; i++) {
          const piece = Buffer.from(`line ${i} ${"x".repeat(i % 37)}\n`);
          size = await blobs.append("logs/stdout", size, piece);
          expected.push(piece);
          // Every tenth one is sent twice, as after a lost answer.
          if (i % 10 === 0)
            expect(await blobs.append("logs/stdout", size - piece.byteLength, piece)).toBe(size);
        }
        const large = patternPiece(3, 600 * 1024 + 7);
        size = await blobs.append("logs/stdout", size, large);
        expected.push(large);
        const whole = Buffer.concat(expected);
        expect(size).toBe(whole.byteLength);
        expect((await readBuffer(blobs, "logs/stdout")).equals(whole)).toBe(true);
        for (const offset of [1, 100, 4_321, whole.byteLength - large.byteLength - 1, whole.byteLength - 5]) {
          expect(
            (await readBuffer(blobs, "logs/stdout", offset)).equals(whole.subarray(offset)),
            `${offset}`,
          ).toBe(true);
        }
        // A resend that straddles pieces is checked against all of them.
        expect(await blobs.append("logs/stdout", 10, whole.subarray(10, 5_000))).toBe(size);
        const wrong = Buffer.from(whole.subarray(10, 5_000));
        wrong[4_000] ^= 1;
        await expect(blobs.append("logs/stdout", 10, wrong)).rejects.toThrow(/differs/);
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
        await expect(blobs.write(key, chunks("x"))).rejects.toThrow();
        await expect(blobs.append(key, 0, Buffer.from("x"))).rejects.toThrow();
        await expect(blobs.stat(key)).rejects.toThrow();
        expect(() => blobs.read(key)).toThrow(Error);
        if (key !== "") await expect(blobs.list(key)).rejects.toThrow();
        await expect(blobs.deletePrefix(key)).rejects.toThrow();
        expect(await blobs.list("")).toStrictEqual([]);
      });

      test("a refused write does not leave its source stream hanging", async () => {
        const source = chunks("x");
        await expect(blobs.write("../x", source)).rejects.toThrow();
        expect(source.destroyed).toBe(true);
      });
    });

    describe("a write that fails midway", () => {
      test("leaves no blob", async () => {
        await expect(blobs.write("jobs/1/outputs/result", failingStream())).rejects.toThrow(
          "connection reset",
        );
        expect(await blobs.stat("jobs/1/outputs/result")).toBeNull();
        await expect(readText(blobs, "jobs/1/outputs/result")).rejects.toThrow(BlobNotFoundError);
        expect(await blobs.list("")).toStrictEqual([]);
      });

      test("keeps the blob it was replacing", async () => {
        await blobs.write("result", chunks("the old result"));
        await expect(blobs.write("result", failingStream())).rejects.toThrow("connection reset");
        expect(await readText(blobs, "result")).toBe("the old result");
        expect(keys(await blobs.list(""))).toStrictEqual(["result"]);
      });
    });

    test("a 20 MB blob streams in and out, whole and from offsets, with memory that does not grow with it", async () => {
      const size = 20 * 1024 * 1024 + 12_345;
      const baseline = await liveBytes();
      let peak = 0;
      const sample = async () => {
        peak = Math.max(peak, (await liveBytes()) - baseline);
      };
      expect(await blobs.write("jobs/1/checkpoints/big", patternStream(size, sample))).toStrictEqual({
        key: "jobs/1/checkpoints/big",
        bytes: size,
      });
      const writePeak = peak;
      peak = 0;
      for (const offset of [0, 5 * 1024 * 1024 + 17]) {
        const hash = createHash("sha256");
        let read = 0;
        let nextSample = 0;
        for await (const part of blobs.read("jobs/1/checkpoints/big", offset)) {
          hash.update(part as Buffer);
          read += (part as Buffer).byteLength;
          if (read >= nextSample) {
            await sample();
            nextSample += 1024 * 1024;
          }
        }
        expect(read).toBe(size - offset);
        expect(hash.digest("hex"), `from ${offset}`).toBe(patternHash(size, offset));
      }
      const readPeak = peak;
      console.log(
        `${name}: 20 MB blob, live memory grew at most ${(writePeak / 2 ** 20).toFixed(1)} MiB writing, ${(readPeak / 2 ** 20).toFixed(1)} MiB reading`,
      );
      // Half the blob: a store that held it whole, or read far ahead of its reader, would not stay under it.
      expect(writePeak).toBeLessThan(10 * 1024 * 1024);
      expect(readPeak).toBeLessThan(10 * 1024 * 1024);
      const tail = await readBuffer(blobs, "jobs/1/checkpoints/big", size - 10);
      expect(tail.byteLength).toBe(10);
    }, 120_000);

    test("a reader that has started keeps reading the blob it started on, through a rewrite and a delete", async () => {
      const old = patternPiece(1, 3 * 1024 * 1024 + 5);
      await blobs.write("ckpt", Readable.from([old]));
      const rewritten = blobs.read("ckpt");
      const deleted = blobs.read("ckpt");
      const first = await firstPiece(rewritten);
      const firstOfDeleted = await firstPiece(deleted);
      await blobs.write("ckpt", chunks("new"));
      expect(Buffer.concat([first, await restOf(rewritten)]).equals(old)).toBe(true);
      await blobs.deletePrefix("ckpt");
      expect(Buffer.concat([firstOfDeleted, await restOf(deleted)]).equals(old)).toBe(true);
      expect(await blobs.stat("ckpt")).toBeNull();
    });

    test("concurrent readers during rewrites see an old blob or a new one, never a mix", async () => {
      const versions = [0, 1, 2, 3].map((v) => patternPiece(v, 700 * 1024 + v));
      await blobs.write("shared", Readable.from([versions[0]]));
      const reads: Promise<Buffer>[] = [];
      const writes: Promise<unknown>[] = [];
      for (let v = 1; v < versions.length; v++) {
        // Pieces of 64 KiB, so the rewrite takes a while and the reads overlap it.
        const pieces = [];
        for (let at = 0; at < versions[v].byteLength; at += PIECE)
          pieces.push(versions[v].subarray(at, at + PIECE));
        writes.push(blobs.write("shared", Readable.from(pieces)));
        for (let r = 0; r < 4; r++) {
          reads.push(readBuffer(blobs, "shared"));
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      await Promise.all(writes);
      reads.push(readBuffer(blobs, "shared"));
      const seen = await Promise.all(reads);
      for (const bytes of seen) {
        expect(versions.some((version) => version.equals(bytes))).toBe(true);
      }
      const final = seen[seen.length - 1];
      expect(versions.slice(1).some((version) => version.equals(final))).toBe(true);
    });

    test("what one store instance wrote, another on the same data reads, lists and appends to", async () => {
      const other = under.another();
      await blobs.write("jobs/7/inputs/grid", chunks("grid data"));
      await blobs.append("jobs/7/logs/out", 0, Buffer.from("from one"));
      expect(await readText(other, "jobs/7/inputs/grid")).toBe("grid data");
      expect(await other.list("jobs/7")).toStrictEqual([
        { key: "jobs/7/inputs/grid", bytes: 9 },
        { key: "jobs/7/logs/out", bytes: 8 },
      ]);
      expect(await other.append("jobs/7/logs/out", 8, Buffer.from(", then the other"))).toBe(24);
      expect(await other.append("jobs/7/logs/out", 0, Buffer.from("from one"))).toBe(24);
      expect(await readText(blobs, "jobs/7/logs/out")).toBe("from one, then the other");
      await other.deletePrefix("jobs/7");
      expect(await blobs.list("")).toStrictEqual([]);
    });
  });
}

/** The first piece a stream gives, leaving the stream paused after it. */
async function firstPiece(stream: Readable): Promise<Buffer> {
  const iterator = stream[Symbol.asyncIterator]();
  const { value, done } = await iterator.next();
  if (done) throw new Error("the stream ended at once");
  // restOf goes on with this iterator: a second one on the same stream would not see the first's reads.
  pendingIterators.set(stream, iterator);
  return value as Buffer;
}

const pendingIterators = new WeakMap<Readable, AsyncIterator<unknown>>();

async function restOf(stream: Readable): Promise<Buffer> {
  const iterator = pendingIterators.get(stream) ?? stream[Symbol.asyncIterator]();
  const parts: Buffer[] = [];
  for (;;) {
    const { value, done } = await iterator.next();
    if (done) return Buffer.concat(parts);
    parts.push(value as Buffer);
  }
}
