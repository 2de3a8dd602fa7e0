// The best host for one more task of a batch, found in logarithmic time: the scored hosts in a
// heap ordered as compareScored orders them (not slow, highest rank, most free slots, name). A
// linear scan for each placement made placing 100,000 tasks on 10,000 hosts a billion comparisons.
//
// It rests on a pass's rooms only shrinking (a placement takes room, a gang's reserve withholds
// it): a host's free slots in the heap may be more than it has now, never less, so the heap's top
// is checked against its room, put back with its slots of now when they changed, and dropped for
// good when the need no longer fits there (it will not fit again in this pass). The answer is the
// one the scan over every host gives (bestFitScan): the fitting host that compareScored puts first.

import type { Capacity, Need } from "./fit.ts";
import { fitsCapacity } from "./fit.ts";
import { compareScored, type ScoredHost } from "./rank.ts";

export class FitQueue {
  readonly #scored: readonly ScoredHost[];
  readonly #rooms: readonly Capacity[];
  readonly #need: Need;
  /** Indices into scored/rooms, a binary heap: the best first. */
  readonly #heap: number[];
  /** The free slots each host had when it was (last) put in the heap. */
  readonly #keyed: Float64Array;

  /** `need` is the same for every task asked about (the batch's: batches.ts). */
  constructor(scored: readonly ScoredHost[], rooms: readonly Capacity[], need: Need) {
    this.#scored = scored;
    this.#rooms = rooms;
    this.#need = need;
    this.#keyed = new Float64Array(scored.length);
    this.#heap = [];
    for (let i = 0; i < scored.length; i++) {
      if (!fitsCapacity(need, rooms[i])) continue;
      this.#keyed[i] = rooms[i].slotsFree;
      this.#heap.push(i);
    }
    for (let i = (this.#heap.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  /** The index of the best host with room for the need, or -1 when none has. */
  best(): number {
    const heap = this.#heap;
    while (heap.length > 0) {
      const top = heap[0];
      const room = this.#rooms[top];
      if (!fitsCapacity(this.#need, room)) {
        this.#pop();
        continue;
      }
      if (this.#keyed[top] !== room.slotsFree) {
        // Fewer slots than when it went in: it moves down to where it belongs now.
        this.#keyed[top] = room.slotsFree;
        this.#down(0);
        continue;
      }
      return top;
    }
    return -1;
  }

  #before(a: number, b: number): boolean {
    return compareScored(this.#scored[a], this.#scored[b], this.#keyed[a], this.#keyed[b]) < 0;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    heap[0] = last;
    this.#down(0);
  }

  #down(start: number): void {
    const heap = this.#heap;
    const n = heap.length;
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) return;
      const right = left + 1;
      const child = right < n && this.#before(heap[right], heap[left]) ? right : left;
      if (!this.#before(heap[child], heap[i])) return;
      [heap[i], heap[child]] = [heap[child], heap[i]];
      i = child;
    }
  }
}

/** The index of the best scored host with room for `need` (and that `allowed` lets), or -1: every host looked at. */
export function bestFitScan(
  scored: readonly ScoredHost[],
  rooms: readonly Capacity[],
  need: Need,
  allowed: ((host: string) => boolean) | null,
): number {
  let best = -1;
  for (let i = 0; i < scored.length; i++) {
    const room = rooms[i];
    if (!fitsCapacity(need, room)) continue;
    if (allowed && !allowed(scored[i].host.name)) continue;
    if (best < 0 || compareScored(scored[i], scored[best], room.slotsFree, rooms[best].slotsFree) < 0)
      best = i;
  }
  return best;
}
