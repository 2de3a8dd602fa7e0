// What the agent tells the server its cache holds: the objects used most recently first, bounded;
// sent with a connection's first heartbeat and then only when the objects (or their sizes) change,
// not when only their order does; a new connection carries it again. The index counts its changes,
// and the cache makes the summary again only after one.

import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CacheIndex } from "../../../../src/agent/cache/cache-index.ts";
import { ContentCache } from "../../../../src/agent/cache/content-cache.ts";
import type { DownloadSource } from "../../../../src/agent/cache/download.ts";
import { HeldReport, heldSummary } from "../../../../src/agent/cache/held-summary.ts";

const sha = (letter: string) => letter.repeat(64);

describe("heldSummary", () => {
  it("lists the most recently used first, at most `max`", () => {
    const objects = [
      { sha256: sha("a"), bytes: 10, lastUsedMs: 1 },
      { sha256: sha("b"), bytes: 20, lastUsedMs: 3 },
      { sha256: sha("c"), bytes: 30, lastUsedMs: 2 },
    ];
    expect(heldSummary(objects, 2)).toStrictEqual([
      { sha256: sha("b"), bytes: 20 },
      { sha256: sha("c"), bytes: 30 },
    ]);
    expect(heldSummary(objects, 3).map((each) => each.sha256[0])).toStrictEqual(["b", "c", "a"]);
    expect(heldSummary(objects, 0)).toStrictEqual([]);
    expect(heldSummary(objects, -1)).toStrictEqual([]);
  });

  it("orders objects used at the same moment the larger first, then by digest", () => {
    const objects = [
      { sha256: sha("d"), bytes: 5, lastUsedMs: 7 },
      { sha256: sha("c"), bytes: 5, lastUsedMs: 7 },
      { sha256: sha("e"), bytes: 9, lastUsedMs: 7 },
    ];
    expect(heldSummary(objects, 3).map((each) => each.sha256[0])).toStrictEqual(["e", "c", "d"]);
  });
});

describe("HeldReport", () => {
  it("sends a summary on a connection's first heartbeat, then only when it changes", () => {
    const report = new HeldReport();
    const first = {};
    const a = { sha256: sha("a"), bytes: 1 };
    const b = { sha256: sha("b"), bytes: 2 };
    expect(report.next(first, [a, b])).toStrictEqual([a, b]);
    expect(report.next(first, [a, b])).toBeUndefined();
    // The same objects in another order (one was used again): nothing new for the server.
    expect(report.next(first, [b, a])).toBeUndefined();
    expect(report.next(first, [b])).toStrictEqual([b]);
    expect(report.next(first, [{ ...b, bytes: 3 }])).toStrictEqual([{ ...b, bytes: 3 }]);
    // An empty cache is said too (once), so that the server forgets what it held.
    expect(report.next(first, [])).toStrictEqual([]);
    expect(report.next(first, [])).toBeUndefined();
  });

  it("sends it again on a new connection, unchanged or not", () => {
    const report = new HeldReport();
    const a = { sha256: sha("a"), bytes: 1 };
    const first = {};
    const second = {};
    expect(report.next(first, [a])).toStrictEqual([a]);
    expect(report.next(second, [a])).toStrictEqual([a]);
    expect(report.next(second, [a])).toBeUndefined();
  });
});

describe("the index's version", () => {
  it("changes when an object is added, used or removed, not when a missing one is", () => {
    const index = new CacheIndex();
    const seen = [index.version];
    index.add({ sha256: sha("a"), bytes: 1, lastUsedMs: 1 });
    seen.push(index.version);
    index.touch(sha("a"), 5);
    seen.push(index.version);
    index.touch(sha("z"), 5);
    index.remove(sha("z"));
    seen.push(index.version);
    index.remove(sha("a"));
    seen.push(index.version);
    expect(new Set(seen.slice(0, 3)).size).toBe(3);
    expect(seen[3]).toBe(seen[2]);
    expect(seen[4]).not.toBe(seen[3]);
  });
});

describe("ContentCache.held", () => {
  it("summarises what the cache holds, made again only once the index changed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "steward-held-"));
    try {
      const cache = new ContentCache(join(dir, "cache"), 1024 ** 2);
      await cache.load();
      const empty = cache.held(4);
      expect(empty).toStrictEqual([]);
      expect(cache.held(4)).toBe(empty);
      const body = Buffer.from("hello");
      const digest = createHash("sha256").update(body).digest("hex");
      const source: DownloadSource = { name: "test", open: async () => new Response(body) };
      await cache.placeByDigest(digest, source, join(dir, "out"));
      const held = cache.held(4);
      expect(held).toStrictEqual([{ sha256: digest, bytes: 5 }]);
      expect(cache.held(4)).toBe(held);
      expect(cache.held(0)).toStrictEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
