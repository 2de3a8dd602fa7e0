// The host's content cache (`--cache-gb`): the files attempts are given (the server's uploaded
// inputs, URL inputs) kept under the agent's work folder, by their SHA-256, shared by every task
// and job on the host, within a capacity (least recently used first out: cache-index.ts).
//
// Its folder: `objects/<sha256>` (complete files only; the mtime is the last use), `urls/<hash of
// the URL>.json` (a URL's validators and the object its last answer was: cache-key.ts) and `tmp/`.
// A download goes to a temporary name in tmp/, is synced, and only then renamed into objects/, so
// no half file is ever in the cache: an agent killed halfway leaves it in tmp/, which the next start
// empties. The index is rebuilt from the folder at start. One download per object (or per URL) at a
// time: a task that needs what another is fetching waits for it, then finds it here. An object is
// pinned while it is copied into an attempt's folder, so no eviction takes it meanwhile.
//
// A capacity of 0 (`--cache-gb 0`) turns the cache off: every placement downloads its own copy (to
// a temporary name beside its target, checked against the digest, then renamed), no download is
// shared, nothing is kept or written under the folder (an earlier run's is removed at start), and
// every placement counts a miss.
//
// Files reach attempts as copies (a reflink where the file system makes one: COPYFILE_FICLONE), not
// as hard links: a job could make a link to a file of its own account writable again and change
// every later task's input.

import { randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { constants, copyFile, mkdir, rename, unlink, utimes, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { HeldObject } from "../../common/model/host-facts.ts";
import { CacheIndex, indexFromListing, type ListedFile } from "./cache-index.ts";
import {
  conditionalHeaders,
  parseUrlRecord,
  revalidatable,
  type UrlRecord,
  urlRecordName,
  type Validators,
} from "./cache-key.ts";
import { DOWNLOAD_POLICY, type DownloadPolicy, type DownloadSource, download } from "./download.ts";
import { heldSummary } from "./held-summary.ts";

/** What the cache did since the agent started (the agent's heartbeats carry them to the server's /metrics). */
export interface CacheCounters {
  /** Files placed from the cache without moving their content over the network. */
  hits: number;
  /** Files that had to be fetched. */
  misses: number;
  /** Bytes that came over the network into the cache. */
  bytesFetched: number;
  /** Bytes of the files placed from the cache: what did not come over the network. */
  bytesSaved: number;
  /** Bytes the cache holds now. */
  bytesHeld: number;
}

/** What a fetch into the cache gave: a new (or equal) object, pinned; or the cached one is current. */
type Fetched = { kind: "not-modified" } | { kind: "fetched"; sha256: string; validators: Validators };

/** The default capacity, in GiB: `--cache-gb`. */
export const DEFAULT_CACHE_GB = 10;

export const GIB = 1024 ** 3;

export class ContentCache {
  readonly dir: string;
  readonly capacityBytes: number;
  readonly #index = new CacheIndex();
  readonly #urls = new Map<string, UrlRecord>();
  readonly #locks = new Map<string, Promise<void>>();
  readonly #policy: DownloadPolicy;
  readonly #counters = { hits: 0, misses: 0, bytesFetched: 0, bytesSaved: 0 };
  /** The last summary held() made, and at which version of the index. */
  #held: { version: number; max: number; summary: HeldObject[] } | null = null;

  constructor(dir: string, capacityBytes: number, policy: DownloadPolicy = DOWNLOAD_POLICY) {
    this.dir = dir;
    this.capacityBytes = capacityBytes;
    this.#policy = policy;
  }

  /** A capacity of 0: every placement fetches its own copy, and nothing is kept (see the head of this file). */
  get off(): boolean {
    return this.capacityBytes <= 0;
  }

  get counters(): CacheCounters {
    return { ...this.#counters, bytesHeld: this.#index.totalBytes };
  }

  /** The objects held, by digest (for tests and the agent's log). */
  get objects(): string[] {
    return this.#index.digests();
  }

  /**
   * What the cache holds for the server's data affinity (held-summary.ts): the `max` objects used
   * most recently, the most recent first. Made again only once the index has changed.
   */
  held(max: number): HeldObject[] {
    const version = this.#index.version;
    if (this.#held?.version !== version || this.#held.max !== max)
      this.#held = { version, max, summary: heldSummary(this.#index.values(), max) };
    return this.#held.summary;
  }

  get #objectsDir(): string {
    return join(this.dir, "objects");
  }

  #objectPath(sha256: string): string {
    return join(this.dir, "objects", sha256);
  }

  /**
   * Makes the folder, empties tmp/ (an earlier run's unfinished downloads) and rebuilds the index;
   * the cache off, removes the folder instead.
   */
  async load(): Promise<void> {
    if (this.off) {
      // What a run with a capacity kept: nothing of it is used now.
      rmSync(this.dir, { recursive: true, force: true });
      return;
    }
    for (const part of ["objects", "urls", "tmp"])
      await mkdir(join(this.dir, part), { recursive: true, mode: 0o700 });
    rmSync(join(this.dir, "tmp"), { recursive: true, force: true });
    await mkdir(join(this.dir, "tmp"), { mode: 0o700 });
    const listing: ListedFile[] = [];
    for (const entry of readdirSync(this.#objectsDir, { withFileTypes: true })) {
      const stat = entry.isFile() ? statSync(join(this.#objectsDir, entry.name)) : null;
      listing.push({
        name: entry.name,
        bytes: stat?.size ?? 0,
        mtimeMs: stat?.mtimeMs ?? 0,
        isFile: entry.isFile(),
      });
    }
    const { objects, strays } = indexFromListing(listing);
    for (const stray of strays) rmSync(join(this.#objectsDir, stray), { recursive: true, force: true });
    for (const object of objects) this.#index.add(object);
    const urlsDir = join(this.dir, "urls");
    for (const name of readdirSync(urlsDir)) {
      let text = "";
      try {
        text = readFileSync(join(urlsDir, name), "utf8");
      } catch {}
      const record = parseUrlRecord(name, text, (sha256) => this.#index.has(sha256));
      if (record) this.#urls.set(record.url, record);
      else rmSync(join(urlsDir, name), { recursive: true, force: true });
    }
    this.#evict();
  }

  /**
   * Places the content of digest `sha256` at `target` (a new file), from the cache, or fetched from
   * `source` first (and checked against the digest) when the cache lacks it.
   */
  async placeByDigest(sha256: string, source: DownloadSource, target: string): Promise<void> {
    if (this.off) return await this.#fetchOwnCopy(source, target, { sha256 });
    await this.#exclusive(`sha256:${sha256}`, async () => {
      if (this.#hit(sha256)) return;
      const fetched = await this.#fetch(source, { sha256 });
      if (fetched.kind === "not-modified") throw new Error(`${source.name}: 304 to an unconditional request`);
    });
    await this.#place(sha256, target);
  }

  /**
   * Places the content of `url` at `target`: what the cache holds of it when its server says it is
   * still current (a conditional request with the validators it gave), else fetched anew.
   */
  async placeByUrl(url: string, source: DownloadSource, target: string): Promise<void> {
    if (this.off) return await this.#fetchOwnCopy(source, target, {});
    let sha256 = "";
    await this.#exclusive(`url:${url}`, async () => {
      const known = this.#urls.get(url);
      const current = known && this.#index.has(known.sha256) ? known : undefined;
      // Kept while its server is asked whether it is still current.
      if (current) this.#index.pin(current.sha256);
      let fetched: Fetched;
      try {
        fetched = await this.#fetch(source, current ? { conditional: conditionalHeaders(current) } : {});
      } catch (error) {
        if (current) this.#index.unpin(current.sha256);
        throw error;
      }
      if (fetched.kind === "not-modified") {
        if (!current) throw new Error(`${source.name}: 304 to an unconditional request`);
        // Its pin is now the placement's.
        this.#countHit(current.sha256);
        sha256 = current.sha256;
        return;
      }
      if (current) this.#index.unpin(current.sha256);
      try {
        await this.#keepUrl(url, fetched.sha256, fetched.validators);
      } catch (error) {
        this.#index.unpin(fetched.sha256);
        throw error;
      }
      sha256 = fetched.sha256;
    });
    await this.#place(sha256, target);
  }

  /** An object the cache holds, pinned for its placement and counted a hit; false when it has none. */
  #hit(sha256: string): boolean {
    if (!this.#index.has(sha256)) return false;
    this.#index.pin(sha256);
    this.#countHit(sha256);
    return true;
  }

  #countHit(sha256: string): void {
    this.#counters.hits++;
    this.#counters.bytesSaved += this.#index.get(sha256)?.bytes ?? 0;
  }

  /**
   * Downloads into tmp/ and, when fetched, renames it into objects/ (unless an equal one is there)
   * and pins it, in the same turn, for the caller's placement.
   */
  async #fetch(
    source: DownloadSource,
    options: { sha256?: string; conditional?: Record<string, string> },
  ): Promise<Fetched> {
    const temporary = join(this.dir, "tmp", `${randomBytes(12).toString("hex")}.part`);
    try {
      const result = await download(source, temporary, { ...options, policy: this.#policy });
      if (result.kind === "not-modified") return result;
      this.#counters.misses++;
      this.#counters.bytesFetched += result.received;
      if (!this.#index.has(result.sha256)) {
        await rename(temporary, this.#objectPath(result.sha256));
        syncFolder(this.#objectsDir);
        this.#index.add({ sha256: result.sha256, bytes: result.bytes, lastUsedMs: Date.now() });
      }
      this.#index.pin(result.sha256);
      return { kind: "fetched", sha256: result.sha256, validators: result.validators };
    } finally {
      await unlink(temporary).catch(() => {});
    }
  }

  /**
   * The cache off: downloads into a temporary name beside `target` (in the attempt's own folder,
   * not the cache's), checked against the digest when there is one, then renames it to `target`.
   */
  async #fetchOwnCopy(source: DownloadSource, target: string, options: { sha256?: string }): Promise<void> {
    // Not named after the target, whose name may already be as long as a name can be.
    const temporary = join(dirname(target), `.steward-${randomBytes(12).toString("hex")}.part`);
    try {
      const result = await download(source, temporary, { ...options, policy: this.#policy });
      if (result.kind === "not-modified") throw new Error(`${source.name}: 304 to an unconditional request`);
      this.#counters.misses++;
      this.#counters.bytesFetched += result.received;
      await rename(temporary, target);
    } finally {
      await unlink(temporary).catch(() => {});
    }
  }

  /** Keeps (or forgets) what the URL's answer was, by its validators. */
  async #keepUrl(url: string, sha256: string, validators: Validators): Promise<void> {
    const path = join(this.dir, "urls", urlRecordName(url));
    if (!revalidatable(validators)) {
      this.#urls.delete(url);
      await unlink(path).catch(() => {});
      return;
    }
    const record: UrlRecord = { url, sha256, ...validators };
    const temporary = join(this.dir, "tmp", `${randomBytes(12).toString("hex")}.json`);
    await writeFile(temporary, JSON.stringify(record), { mode: 0o600 });
    await rename(temporary, path);
    this.#urls.set(url, record);
  }

  /** Copies a pinned object to `target`, then lets it go and evicts what no longer fits. */
  async #place(sha256: string, target: string): Promise<void> {
    try {
      await copyFile(this.#objectPath(sha256), target, constants.COPYFILE_FICLONE | constants.COPYFILE_EXCL);
      const now = Date.now();
      this.#index.touch(sha256, now);
      await utimes(this.#objectPath(sha256), now / 1000, now / 1000).catch(() => {});
    } finally {
      this.#index.unpin(sha256);
      this.#evict();
    }
  }

  /**
   * Gives back `bytes` of the disk (the work folder is nearly full: host/disk-watch.ts): evicts the
   * least recently used objects not being copied until that much is freed or none is left; returns
   * the bytes freed.
   */
  release(bytes: number): number {
    const held = this.#index.totalBytes;
    this.#evict(Math.max(0, held - bytes));
    return held - this.#index.totalBytes;
  }

  /**
   * Evicts what exceeds `capacity` (the cache's own by default): out of the index and off the disk
   * in one turn (no await), so that no download of the same object can land in between.
   */
  #evict(capacity = this.capacityBytes): void {
    for (const object of this.#index.evict(capacity)) {
      try {
        unlinkSync(this.#objectPath(object.sha256));
      } catch {}
      for (const record of [...this.#urls.values()])
        if (record.sha256 === object.sha256) {
          this.#urls.delete(record.url);
          try {
            unlinkSync(join(this.dir, "urls", urlRecordName(record.url)));
          } catch {}
        }
    }
  }

  /** Runs `work` alone among the works of the same name; the others wait their turn. */
  async #exclusive(name: string, work: () => Promise<void>): Promise<void> {
    const before = this.#locks.get(name) ?? Promise.resolve();
    let release = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const chained = before.then(() => mine);
    this.#locks.set(name, chained);
    await before;
    try {
      await work();
    } finally {
      release();
      if (this.#locks.get(name) === chained) this.#locks.delete(name);
    }
  }
}

/** Makes a rename into `folder` durable. */
function syncFolder(folder: string): void {
  const fd = openSync(folder, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
