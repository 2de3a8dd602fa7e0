// The content cache's index, pure: the objects the cache folder holds (named by their SHA-256,
// with their size and last use), the ones in use right now (pinned: being copied into an
// attempt's folder, never evicted meanwhile), and which to evict to stay within the capacity,
// least recently used first. Rebuilt from the folder's listing when the agent starts
// (content-cache.ts reads the folder; indexFromListing decides what each name is).

/** One complete object of the cache: `objects/<sha256>`. */
export interface CachedObject {
  sha256: string;
  bytes: number;
  /** When it was last placed in an attempt's folder (or stored), ms; the file's mtime across restarts. */
  lastUsedMs: number;
}

/** An object's name in the cache folder: its SHA-256, 64 lower-case hex digits. */
export const OBJECT_NAME = /^[0-9a-f]{64}$/;

/**
 * The objects to evict, in order, for the unpinned ones to bring the total within `capacity` bytes:
 * first any object larger than the whole capacity (it can never be kept), then the least recently
 * used (ties: the larger first, then by name, so that the order is the same on every run). Pinned
 * objects stay, and still count: the total may stay above the capacity until they are let go.
 */
export function evictionOrder(
  objects: readonly CachedObject[],
  pinned: ReadonlySet<string>,
  capacity: number,
): string[] {
  let total = objects.reduce((sum, object) => sum + object.bytes, 0);
  const order: string[] = [];
  const candidates = objects.filter((object) => !pinned.has(object.sha256));
  for (const object of candidates)
    if (object.bytes > capacity) {
      order.push(object.sha256);
      total -= object.bytes;
    }
  const rest = candidates
    .filter((object) => object.bytes <= capacity)
    .sort(
      (a, b) =>
        a.lastUsedMs - b.lastUsedMs ||
        b.bytes - a.bytes ||
        (a.sha256 < b.sha256 ? -1 : a.sha256 > b.sha256 ? 1 : 0),
    );
  for (const object of rest) {
    if (total <= capacity) break;
    order.push(object.sha256);
    total -= object.bytes;
  }
  return order;
}

/** A file of the cache's objects folder as listed: its name, size, mtime, and whether it is a plain file. */
export interface ListedFile {
  name: string;
  bytes: number;
  mtimeMs: number;
  isFile: boolean;
}

/**
 * The objects a listing of the objects folder holds, and the names that are none (anything not
 * named as an object, or not a plain file): the agent removes those.
 */
export function indexFromListing(listing: readonly ListedFile[]): {
  objects: CachedObject[];
  strays: string[];
} {
  const objects: CachedObject[] = [];
  const strays: string[] = [];
  for (const file of listing) {
    if (file.isFile && OBJECT_NAME.test(file.name))
      objects.push({ sha256: file.name, bytes: file.bytes, lastUsedMs: file.mtimeMs });
    else strays.push(file.name);
  }
  return { objects, strays };
}

export class CacheIndex {
  readonly #objects = new Map<string, CachedObject>();
  /** How many placements use each object now. */
  readonly #pins = new Map<string, number>();
  #total = 0;
  /** Counts the changes to what is held and when each was last used: a summary made at one count holds until the next. */
  #version = 0;

  constructor(objects: readonly CachedObject[] = []) {
    for (const object of objects) this.add(object);
  }

  get totalBytes(): number {
    return this.#total;
  }

  get size(): number {
    return this.#objects.size;
  }

  /** Changes with every object added, removed or used (held-summary.ts makes a summary once per change). */
  get version(): number {
    return this.#version;
  }

  /** The objects held, in no order. */
  values(): IterableIterator<Readonly<CachedObject>> {
    return this.#objects.values();
  }

  /** The digests held, sorted. */
  digests(): string[] {
    return [...this.#objects.keys()].sort();
  }

  has(sha256: string): boolean {
    return this.#objects.has(sha256);
  }

  get(sha256: string): CachedObject | undefined {
    return this.#objects.get(sha256);
  }

  /** Adds a complete object (or replaces the entry of the same name). */
  add(object: CachedObject): void {
    this.remove(object.sha256);
    this.#objects.set(object.sha256, { ...object });
    this.#total += object.bytes;
    this.#version++;
  }

  remove(sha256: string): void {
    const known = this.#objects.get(sha256);
    if (!known) return;
    this.#objects.delete(sha256);
    this.#total -= known.bytes;
    this.#version++;
  }

  /** The object was used at `nowMs`: the last to be evicted. */
  touch(sha256: string, nowMs: number): void {
    const known = this.#objects.get(sha256);
    if (!known) return;
    known.lastUsedMs = Math.max(known.lastUsedMs, nowMs);
    this.#version++;
  }

  pin(sha256: string): void {
    this.#pins.set(sha256, (this.#pins.get(sha256) ?? 0) + 1);
  }

  unpin(sha256: string): void {
    const count = (this.#pins.get(sha256) ?? 0) - 1;
    if (count > 0) this.#pins.set(sha256, count);
    else this.#pins.delete(sha256);
  }

  isPinned(sha256: string): boolean {
    return this.#pins.has(sha256);
  }

  /** Takes out of the index the objects to evict for `capacity` (evictionOrder) and returns them. */
  evict(capacity: number): CachedObject[] {
    const order = evictionOrder([...this.#objects.values()], new Set(this.#pins.keys()), capacity);
    const evicted: CachedObject[] = [];
    for (const sha256 of order) {
      const object = this.#objects.get(sha256);
      if (!object) continue;
      evicted.push(object);
      this.remove(sha256);
    }
    return evicted;
  }
}
