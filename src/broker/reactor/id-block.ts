// Job ids come from the store, so that no two servers (or two lives of one server) hand out the
// same one. Reserving one id per submit would cost a commit each; ids are reserved in blocks, and
// the next block is asked for before this one runs out. Ids left in a block when the server stops
// are skipped, as a database sequence's cache is.
//
// Every submit takes its ids here, in the order it asks: a single job one id, a workflow one run
// of consecutive ids for its jobs (`take(count)`; when the rest of the block is too short it is
// skipped and the run comes from the next block), so ids follow submission order across jobs and
// workflows. An id handed out is "in flight" until its submit has made the job or given up
// (`settle`): a listing shows no job above the lowest id in flight (`lowestInFlight`), so that a
// client paging with `after=` never steps past a job that is about to appear below its cursor.

export const ID_BLOCK_SIZE = 32;

interface Upcoming {
  first: Promise<number>;
  size: number;
}

export class IdBlock {
  readonly #reserve: (count: number) => Promise<number>;
  readonly #size: number;
  #next = 0;
  #end = 0;
  #upcoming: Upcoming | null = null;
  /** The first id of each run handed out and not settled, with the run's length. */
  readonly #inFlight = new Map<number, number>();

  /** `reserve(count)` reserves `count` consecutive ids durably and returns the first. */
  constructor(reserve: (count: number) => Promise<number>, size = ID_BLOCK_SIZE) {
    this.#reserve = reserve;
    this.#size = size;
  }

  /** One id, in flight until settled. */
  next(): Promise<number> {
    return this.take(1);
  }

  /** `count` consecutive ids; answers the first. The run is in flight until `settle(first)`. */
  async take(count: number): Promise<number> {
    if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`cannot take ${count} ids`);
    while (this.#end - this.#next < count) {
      const upcoming = this.#prefetch(count);
      const first = await upcoming.first;
      // Another caller may have taken this block over while we waited.
      if (this.#upcoming === upcoming) {
        this.#upcoming = null;
        this.#next = first;
        this.#end = first + upcoming.size;
      }
    }
    const first = this.#next;
    this.#next += count;
    this.#inFlight.set(first, count);
    if (this.#end - this.#next <= this.#size / 2) void this.#prefetch(1).first.catch(() => {});
    return first;
  }

  /** The submit that took the run starting at `first` has made its jobs, or given up. */
  settle(first: number): void {
    this.#inFlight.delete(first);
  }

  /** The lowest id handed out whose submit has not settled; null when none is in flight. */
  lowestInFlight(): number | null {
    let lowest: number | null = null;
    for (const first of this.#inFlight.keys()) if (lowest === null || first < lowest) lowest = first;
    return lowest;
  }

  /** The next block, asked for once: large enough for `count` ids, at least a block's size. */
  #prefetch(count: number): Upcoming {
    if (this.#upcoming && this.#upcoming.size >= count) return this.#upcoming;
    const size = Math.max(this.#size, count);
    const upcoming: Upcoming = { first: this.#reserve(size), size };
    this.#upcoming = upcoming;
    // A failed reservation is not kept: the next call asks again.
    upcoming.first.catch(() => {
      if (this.#upcoming === upcoming) this.#upcoming = null;
    });
    return upcoming;
  }
}
