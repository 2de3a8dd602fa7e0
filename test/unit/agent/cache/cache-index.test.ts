// The content cache's index as tables: which objects eviction takes, in which order (least
// recently used first, any object larger than the whole capacity before all, pinned ones never),
// what a listing of the objects folder holds, and the index's sums, pins and evictions.

import { describe, expect, it } from "vitest";
import {
  type CachedObject,
  CacheIndex,
  evictionOrder,
  indexFromListing,
} from "../../../../src/agent/cache/cache-index.ts";

const sha = (letter: string) => letter.repeat(64);
const object = (letter: string, bytes: number, lastUsedMs: number): CachedObject => ({
  sha256: sha(letter),
  bytes,
  lastUsedMs,
});

describe("evictionOrder", () => {
  it.each([
    ["nothing within the capacity", [object("a", 10, 1), object("b", 10, 2)], [], 20, []],
    [
      "the least recently used first",
      [object("a", 10, 3), object("b", 10, 1), object("c", 10, 2)],
      [],
      20,
      ["b"],
    ],
    [
      "as many as it takes, oldest first",
      [object("a", 10, 3), object("b", 10, 1), object("c", 10, 2)],
      [],
      10,
      ["b", "c"],
    ],
    [
      "a pinned object stays, the next oldest goes",
      [object("a", 10, 1), object("b", 10, 2)],
      ["a"],
      10,
      ["b"],
    ],
    [
      "only pinned ones: nothing goes, over the capacity",
      [object("a", 10, 1), object("b", 10, 2)],
      ["a", "b"],
      5,
      [],
    ],
    [
      "an object larger than the capacity goes first, even the newest",
      [object("a", 10, 1), object("b", 50, 9)],
      [],
      40,
      ["b"],
    ],
    ["a capacity of 0 takes every unpinned object", [object("a", 1, 1), object("b", 2, 2)], ["b"], 0, ["a"]],
    ["an empty object fits a capacity of 0", [object("a", 0, 1)], [], 0, []],
    [
      "a tie in last use: the larger first, then by name",
      [object("b", 5, 1), object("a", 5, 1), object("c", 9, 1)],
      [],
      5,
      ["c", "a"],
    ],
  ])("%s", (_, objects, pinned, capacity, expected) => {
    expect(evictionOrder(objects, new Set(pinned.map(sha)), capacity)).toStrictEqual(expected.map(sha));
  });
});

describe("indexFromListing", () => {
  it.each([
    ["an object: 64 lower-case hex digits, a plain file", [{ name: sha("a"), isFile: true }], [sha("a")], []],
    [
      "a temporary or other name is a stray",
      [{ name: `${sha("a")}.part`, isFile: true }],
      [],
      [`${sha("a")}.part`],
    ],
    ["upper-case hex is no object name", [{ name: sha("A"), isFile: true }], [], [sha("A")]],
    ["a folder named as an object is a stray", [{ name: sha("b"), isFile: false }], [], [sha("b")]],
    ["a short name is a stray", [{ name: "abc", isFile: true }], [], ["abc"]],
  ])("%s", (_, files, objects, strays) => {
    const listing = files.map((file) => ({ ...file, bytes: 7, mtimeMs: 42 }));
    const found = indexFromListing(listing);
    expect(found.objects).toStrictEqual(objects.map((name) => ({ sha256: name, bytes: 7, lastUsedMs: 42 })));
    expect(found.strays).toStrictEqual(strays);
  });
});

describe("CacheIndex", () => {
  it("sums the bytes held, and replaces an entry added again", () => {
    const index = new CacheIndex([object("a", 10, 1), object("b", 5, 2)]);
    expect(index.totalBytes).toBe(15);
    index.add(object("a", 20, 3));
    expect(index.totalBytes).toBe(25);
    expect(index.size).toBe(2);
    index.remove(sha("b"));
    index.remove(sha("b"));
    expect(index.totalBytes).toBe(20);
    expect(index.digests()).toStrictEqual([sha("a")]);
  });

  it("a touch makes an object the last to go; it never moves its last use back", () => {
    const index = new CacheIndex([object("a", 10, 1), object("b", 10, 2)]);
    index.touch(sha("a"), 5);
    index.touch(sha("a"), 3);
    expect(index.get(sha("a"))?.lastUsedMs).toBe(5);
    expect(index.evict(10).map((each) => each.sha256)).toStrictEqual([sha("b")]);
    expect(index.totalBytes).toBe(10);
  });

  it("keeps an object pinned as many times as it is pinned, and evicts it once let go", () => {
    const index = new CacheIndex([object("a", 10, 1)]);
    index.pin(sha("a"));
    index.pin(sha("a"));
    expect(index.evict(0)).toStrictEqual([]);
    index.unpin(sha("a"));
    expect(index.isPinned(sha("a"))).toBe(true);
    expect(index.evict(0)).toStrictEqual([]);
    index.unpin(sha("a"));
    expect(index.isPinned(sha("a"))).toBe(false);
    expect(index.evict(0).map((each) => each.sha256)).toStrictEqual([sha("a")]);
    expect(index.has(sha("a"))).toBe(false);
    expect(index.totalBytes).toBe(0);
  });
});
