// Job ids come from the store, so that no two servers (or two lives of one server) hand out the
// same one. Reserving one id per submit would cost a commit each; ids are reserved in blocks, and
// the next block is asked for before this one runs out. Ids left in a block when the server stops
// are skipped, as a database sequence's cache is.

export const ID_BLOCK_SIZE = 32;

export class IdBlock {
  readonly #reserve: (count: number) => Promise<number>;
  readonly #size: number;
  #next = 0;
  #end = 0;
  #upcoming: Promise<number> | null = null;

  /** `reserve(count)` reserves `count` consecutive ids durably and returns the first. */
  constructor(reserve: (count: number) => Promise<number>, size = ID_BLOCK_SIZE) {
    this.#reserve = reserve;
    this.#size = size;
  }

  async next(): Promise<number> {
    while (this.#next >= this.#end) {
      const upcoming = this.#prefetch();
      const first = await upcoming;
      // Another caller may have taken this block over while we waited.
      if (this.#upcoming === upcoming) {
        this.#upcoming = null;
        this.#next = first;
        this.#end = first + this.#size;
      }
    }
    const id = this.#next++;
    if (this.#end - this.#next <= this.#size / 2) void this.#prefetch().catch(() => {});
    return id;
  }

  #prefetch(): Promise<number> {
    if (this.#upcoming) return this.#upcoming;
    const upcoming = this.#reserve(this.#size);
    this.#upcoming = upcoming;
    // A failed reservation is not kept: the next call asks again.
    upcoming.catch(() => {
      if (this.#upcoming === upcoming) this.#upcoming = null;
    });
    return upcoming;
  }
}
