// The host's content cache on real files, with a real HTTP server on loopback: a digest fetched
// once and then placed from the cache; tasks at once fetch it once, the others waiting; a URL
// without a digest revalidated (304) rather than fetched again, and fetched anew once it changed;
// the least recently used evicted first; a restarted agent's cache rebuilt from its folder, its
// unfinished downloads gone; a refused download leaving nothing; placed files copies the job
// cannot change the cache through; a capacity of 0 turning the cache off: every task fetches its
// own copy (through a temporary name, checked, resumed), nothing shared and nothing under cache/.

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ContentCache } from "../../../../src/agent/cache/content-cache.ts";
import { type DownloadSource, shownUrl } from "../../../../src/agent/cache/download.ts";
import { type FileServer, startFileServer } from "../../../helpers/file-server.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

const POLICY = { tries: 3, firstDelayMs: 10, maxDelayMs: 20, idleTimeoutMs: 5_000 };
const digestOf = (content: Buffer) => createHash("sha256").update(content).digest("hex");

let server: FileServer;
let dir: string;
let placed = 0;
beforeEach(async () => {
  server = await startFileServer();
  dir = tempDir("steward-cache-");
  mkdirSync(join(dir, "run"));
});
afterEach(async () => {
  await server.close();
  cleanup(dir);
});

function source(path: string): DownloadSource {
  const url = `${server.url}${path}`;
  return { name: shownUrl(url), open: (headers, signal) => fetch(url, { headers, signal }) };
}

/** Serves `content` at `/name` and answers its digest. */
function serve(name: string, content: string): string {
  server.files.set(`/${name}`, { content: Buffer.from(content) });
  return digestOf(Buffer.from(content));
}

async function newCache(capacity = 1_000_000): Promise<ContentCache> {
  const cache = new ContentCache(join(dir, "cache"), capacity, POLICY);
  await cache.load();
  return cache;
}

/** A new target in the run folder. */
const target = () => join(dir, "run", `file-${++placed}`);

describe("by digest", () => {
  it("fetches an object once, then places it from the cache", async () => {
    const sha = serve("a", "alpha");
    const cache = await newCache();
    const [first, second] = [target(), target()];
    await cache.placeByDigest(sha, source("/a"), first);
    await cache.placeByDigest(sha, source("/a"), second);
    expect(readFileSync(first, "utf8")).toBe("alpha");
    expect(readFileSync(second, "utf8")).toBe("alpha");
    expect(server.bodies("/a")).toBe(1);
    expect(cache.counters).toStrictEqual({
      hits: 1,
      misses: 1,
      bytesFetched: 5,
      bytesSaved: 5,
      bytesHeld: 5,
    });
    expect(cache.objects).toStrictEqual([sha]);
  });

  it("tasks asking at once fetch it once: the others wait for that download", async () => {
    const content = "x".repeat(200_000);
    const sha = serve("big", content);
    server.files.get("/big")!.trickleBytes = 50_000;
    server.files.get("/big")!.trickleMs = 20;
    const cache = await newCache();
    const targets = [target(), target(), target(), target(), target()];
    await Promise.all(targets.map((each) => cache.placeByDigest(sha, source("/big"), each)));
    for (const each of targets) expect(readFileSync(each, "utf8")).toBe(content);
    expect(server.bodies("/big")).toBe(1);
    expect(cache.counters).toMatchObject({ hits: 4, misses: 1, bytesFetched: 200_000, bytesSaved: 800_000 });
  });

  it("a wrong digest leaves nothing in the cache, not even in tmp/", async () => {
    serve("a", "alpha");
    const cache = await newCache();
    await expect(cache.placeByDigest("0".repeat(64), source("/a"), target())).rejects.toThrow(
      "sha256 mismatch",
    );
    expect(readdirSync(join(dir, "cache", "objects"))).toStrictEqual([]);
    expect(readdirSync(join(dir, "cache", "tmp"))).toStrictEqual([]);
    expect(cache.counters.bytesHeld).toBe(0);
  });

  it("places a copy: a job writing to it changes neither the cache nor the next task's file", async () => {
    const sha = serve("a", "alpha");
    const cache = await newCache();
    const first = target();
    await cache.placeByDigest(sha, source("/a"), first);
    expect(statSync(first).nlink).toBe(1);
    writeFileSync(first, "changed");
    const second = target();
    await cache.placeByDigest(sha, source("/a"), second);
    expect(readFileSync(second, "utf8")).toBe("alpha");
    expect(readFileSync(join(dir, "cache", "objects", sha), "utf8")).toBe("alpha");
  });
});

describe("by URL", () => {
  it("asks the server whether what it holds is current (304: a hit), and fetches it anew once changed", async () => {
    serve("u", "version one");
    const cache = await newCache();
    const [first, second, third] = [target(), target(), target()];
    await cache.placeByUrl(`${server.url}/u`, source("/u"), first);
    await cache.placeByUrl(`${server.url}/u`, source("/u"), second);
    expect(readFileSync(second, "utf8")).toBe("version one");
    expect(server.requests.map((each) => each.status)).toStrictEqual([200, 304]);
    expect(cache.counters).toMatchObject({ hits: 1, misses: 1 });
    serve("u", "version two");
    await cache.placeByUrl(`${server.url}/u`, source("/u"), third);
    expect(readFileSync(third, "utf8")).toBe("version two");
    expect(cache.counters).toMatchObject({ hits: 1, misses: 2 });
  });

  it("a server that gives no validator is asked for the whole file each time", async () => {
    server.files.set("/plain", { content: Buffer.from("plain"), etag: false, lastModified: false });
    const cache = await newCache();
    await cache.placeByUrl(`${server.url}/plain`, source("/plain"), target());
    await cache.placeByUrl(`${server.url}/plain`, source("/plain"), target());
    expect(server.bodies("/plain")).toBe(2);
    expect(readdirSync(join(dir, "cache", "urls"))).toStrictEqual([]);
  });
});

describe("eviction", () => {
  it("keeps within its capacity, the least recently used out first", async () => {
    const [a, b, c] = ["a", "b", "c"].map((name) => serve(name, name.repeat(10)));
    const cache = await newCache(25);
    await cache.placeByDigest(a, source("/a"), target());
    await cache.placeByDigest(b, source("/b"), target());
    await new Promise((resolve) => setTimeout(resolve, 5));
    await cache.placeByDigest(a, source("/a"), target());
    await cache.placeByDigest(c, source("/c"), target());
    expect(cache.objects).toStrictEqual([a, c].sort());
    expect(cache.counters.bytesHeld).toBe(20);
    expect(existsSync(join(dir, "cache", "objects", b))).toBe(false);
  });

  it("gives back space when asked (the work folder is nearly full): the least recently used first", async () => {
    const names = ["a", "b", "c"];
    const [a, b, c] = names.map((name) => serve(name, name.repeat(10)));
    const cache = await newCache();
    for (const name of names) {
      await cache.placeByDigest(digestOf(Buffer.from(name.repeat(10))), source(`/${name}`), target());
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(cache.release(0)).toBe(0);
    // 15 bytes asked: two objects of 10 go, the oldest first.
    expect(cache.release(15)).toBe(20);
    expect(cache.objects).toStrictEqual([c]);
    expect(existsSync(join(dir, "cache", "objects", a))).toBe(false);
    expect(existsSync(join(dir, "cache", "objects", b))).toBe(false);
    // More than it holds: all it has.
    expect(cache.release(1000)).toBe(10);
    expect(cache.counters.bytesHeld).toBe(0);
    expect(cache.release(10)).toBe(0);
  });

  it("forgets a URL whose object it evicted", async () => {
    serve("u", "u".repeat(10));
    const b = serve("b", "b".repeat(10));
    const cache = await newCache(15);
    await cache.placeByUrl(`${server.url}/u`, source("/u"), target());
    await cache.placeByDigest(b, source("/b"), target());
    expect(readdirSync(join(dir, "cache", "urls"))).toStrictEqual([]);
    await cache.placeByUrl(`${server.url}/u`, source("/u"), target());
    expect(server.requests.filter((each) => each.path === "/u").map((each) => each.status)).toStrictEqual([
      200, 200,
    ]);
  });
});

describe("a restarted agent", () => {
  it("rebuilds the index from the folder, and drops unfinished downloads and strays", async () => {
    const sha = serve("a", "alpha");
    serve("u", "by url");
    const before = await newCache();
    await before.placeByDigest(sha, source("/a"), target());
    await before.placeByUrl(`${server.url}/u`, source("/u"), target());
    writeFileSync(join(dir, "cache", "tmp", "0123.part"), "half a fi");
    writeFileSync(join(dir, "cache", "objects", "stray"), "?");
    const after = await newCache();
    expect(after.objects).toStrictEqual(before.objects);
    expect(after.counters.bytesHeld).toBe(before.counters.bytesHeld);
    expect(readdirSync(join(dir, "cache", "tmp"))).toStrictEqual([]);
    expect(existsSync(join(dir, "cache", "objects", "stray"))).toBe(false);
    const requests = server.requests.length;
    const [first, second] = [target(), target()];
    await after.placeByDigest(sha, source("/a"), first);
    await after.placeByUrl(`${server.url}/u`, source("/u"), second);
    expect(readFileSync(first, "utf8")).toBe("alpha");
    expect(readFileSync(second, "utf8")).toBe("by url");
    expect(server.requests.slice(requests).map((each) => [each.path, each.status])).toStrictEqual([
      ["/u", 304],
    ]);
    expect(after.counters).toMatchObject({ hits: 2, misses: 0 });
  });

  it("evicts down to a capacity smaller than the last run's", async () => {
    const [a, b] = ["a", "b"].map((name) => serve(name, name.repeat(10)));
    const before = await newCache();
    await before.placeByDigest(a, source("/a"), target());
    await new Promise((resolve) => setTimeout(resolve, 5));
    await before.placeByDigest(b, source("/b"), target());
    expect((await newCache(10)).objects).toStrictEqual([b]);
  });
});

describe("a capacity of 0: the cache is off", () => {
  it("tasks asking at once each fetch their own copy, and nothing is written under cache/", async () => {
    const content = "x".repeat(200_000);
    const sha = serve("big", content);
    server.files.get("/big")!.trickleBytes = 50_000;
    server.files.get("/big")!.trickleMs = 20;
    const cache = await newCache(0);
    const [first, second] = [target(), target()];
    await Promise.all([first, second].map((each) => cache.placeByDigest(sha, source("/big"), each)));
    expect(readFileSync(first, "utf8")).toBe(content);
    expect(readFileSync(second, "utf8")).toBe(content);
    expect(server.bodies("/big")).toBe(2);
    expect(cache.counters).toStrictEqual({
      hits: 0,
      misses: 2,
      bytesFetched: 400_000,
      bytesSaved: 0,
      bytesHeld: 0,
    });
    expect(cache.objects).toStrictEqual([]);
    expect(existsSync(join(dir, "cache"))).toBe(false);
    // No part left beside them.
    expect(readdirSync(join(dir, "run")).sort()).toStrictEqual([basename(first), basename(second)].sort());
  });

  it("downloads through a temporary name beside the file: the file is there only whole", async () => {
    const content = "t".repeat(200_000);
    const sha = serve("slow", content);
    server.files.get("/slow")!.trickleBytes = 20_000;
    server.files.get("/slow")!.trickleMs = 20;
    const cache = await newCache(0);
    const placedAt = target();
    const placing = cache.placeByDigest(sha, source("/slow"), placedAt);
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(existsSync(placedAt)).toBe(false);
    expect(readdirSync(join(dir, "run"))).toMatchObject([expect.stringMatching(/\.part$/)]);
    await placing;
    expect(readFileSync(placedAt, "utf8")).toBe(content);
    expect(readdirSync(join(dir, "run"))).toStrictEqual([basename(placedAt)]);
  });

  it("places a file whose name is as long as a name can be", async () => {
    const sha = serve("a", "alpha");
    const cache = await newCache(0);
    const placedAt = join(dir, "run", "n".repeat(255));
    await cache.placeByDigest(sha, source("/a"), placedAt);
    expect(readFileSync(placedAt, "utf8")).toBe("alpha");
  });

  it("a URL is fetched whole by every task, never asked for conditionally", async () => {
    serve("u", "by url");
    const cache = await newCache(0);
    const [first, second] = [target(), target()];
    await Promise.all([first, second].map((each) => cache.placeByUrl(`${server.url}/u`, source("/u"), each)));
    const third = target();
    await cache.placeByUrl(`${server.url}/u`, source("/u"), third);
    for (const each of [first, second, third]) expect(readFileSync(each, "utf8")).toBe("by url");
    expect(server.requests.map((each) => each.status)).toStrictEqual([200, 200, 200]);
    expect(cache.counters).toMatchObject({ hits: 0, misses: 3, bytesFetched: 18, bytesSaved: 0 });
    expect(existsSync(join(dir, "cache"))).toBe(false);
  });

  it("a transfer cut halfway is resumed with a Range request", async () => {
    const content = Buffer.from("r".repeat(10_000));
    server.files.set("/r", { content, cuts: 1, cutAfter: 4_000 });
    const cache = await newCache(0);
    const placedAt = target();
    await cache.placeByDigest(digestOf(content), source("/r"), placedAt);
    expect(readFileSync(placedAt)).toStrictEqual(content);
    expect(server.requests.map((each) => [each.status, each.range])).toStrictEqual([
      [200, null],
      [206, "bytes=4000-"],
    ]);
    expect(cache.counters).toMatchObject({ misses: 1, bytesFetched: 10_000 });
  });

  it("a wrong digest, or a refused download, leaves neither the file nor a part of it", async () => {
    serve("a", "alpha");
    const cache = await newCache(0);
    await expect(cache.placeByDigest("0".repeat(64), source("/a"), target())).rejects.toThrow(
      "sha256 mismatch",
    );
    await expect(cache.placeByUrl(`${server.url}/gone`, source("/gone"), target())).rejects.toThrow(
      "HTTP 404",
    );
    expect(readdirSync(join(dir, "run"))).toStrictEqual([]);
    expect(existsSync(join(dir, "cache"))).toBe(false);
  });

  it("an agent restarted with the cache off removes what an earlier run kept", async () => {
    const sha = serve("a", "alpha");
    await (await newCache()).placeByDigest(sha, source("/a"), target());
    expect(existsSync(join(dir, "cache", "objects", sha))).toBe(true);
    const off = await newCache(0);
    expect(off.objects).toStrictEqual([]);
    expect(existsSync(join(dir, "cache"))).toBe(false);
    await off.placeByDigest(sha, source("/a"), target());
    expect(server.bodies("/a")).toBe(2);
  });
});
