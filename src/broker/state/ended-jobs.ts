// The headers of the jobs that ended and left memory (state/job-header.ts), kept in columns rather
// than as one object each: a broker that has run a million jobs holds a million headers, and as
// objects each would be a header, its counts, two times as heap numbers, a map entry and the id;
// here a row is the name string and a few numbers in typed arrays. Ids the server gives out are
// whole numbers, found through a table indexed by the number; other ids go through a map.

import type { TaskCounts } from "../../common/model/job-state.ts";
import type { JobHeader } from "../../common/model/records.ts";
import { JOB_STATES, type JobState } from "../../common/model/states.ts";

const NUMERIC_ID = /^[1-9]\d{0,14}$/;
const NONE = -1;
const INITIAL_ROWS = 1024;

export class EndedJobs {
  #rows = 0;
  #live = 0;
  /** Numeric ids as numbers; rows with another id keep it in #otherIds. */
  #ids = new Float64Array(INITIAL_ROWS);
  #names: string[] = [];
  #owners: number[] = [];
  /** Each row's QoS tier, as an index into #ownerNames (tier names are few, interned alike). */
  #qos: number[] = [];
  #ownerNames: string[] = [];
  readonly #ownerIndex = new Map<string, number>();
  /** JOB_STATES index, or 255 for a removed row. */
  #states = new Uint8Array(INITIAL_ROWS);
  #numbers = new Float64Array(INITIAL_ROWS * 3); // priority, createdAt, endedAt (NaN: null)
  #counts = new Int32Array(INITIAL_ROWS * 6); // taskCount, pending, running, succeeded, failed, cancelled
  /** Row of a numeric id, by the id (NONE: none). */
  #byNumber = new Int32Array(INITIAL_ROWS).fill(NONE);
  readonly #byOtherId = new Map<string, number>();
  readonly #otherIds = new Map<number, string>();
  /** Headers by JOB_STATES index, kept as they come and go: /metrics counts without a walk. */
  readonly #byState = new Array<number>(JOB_STATES.length).fill(0);

  get size(): number {
    return this.#live;
  }

  has(id: string): boolean {
    return this.#row(id) !== NONE;
  }

  get(id: string): JobHeader | undefined {
    const row = this.#row(id);
    return row === NONE ? undefined : this.#header(row);
  }

  set(header: JobHeader): void {
    const { id } = header;
    this.delete(id);
    const row = this.#rows++;
    this.#grow(this.#rows);
    this.#live++;
    const number = this.#indexable(id) ? Number(id) : Number.NaN;
    this.#ids[row] = number;
    if (Number.isNaN(number)) {
      this.#byOtherId.set(id, row);
      this.#otherIds.set(row, id);
    } else {
      this.#growIndex(number + 1);
      this.#byNumber[number] = row;
    }
    this.#names[row] = header.name;
    this.#owners[row] = this.#owner(header.owner);
    this.#qos[row] = this.#owner(header.qos);
    this.#states[row] = JOB_STATES.indexOf(header.state);
    this.#byState[this.#states[row]]++;
    this.#numbers[row * 3] = header.priority;
    this.#numbers[row * 3 + 1] = header.createdAt;
    this.#numbers[row * 3 + 2] = header.endedAt ?? Number.NaN;
    const counts = this.#counts;
    counts[row * 6] = header.taskCount;
    counts[row * 6 + 1] = header.counts.pending;
    counts[row * 6 + 2] = header.counts.running;
    counts[row * 6 + 3] = header.counts.succeeded;
    counts[row * 6 + 4] = header.counts.failed;
    counts[row * 6 + 5] = header.counts.cancelled;
  }

  /** Removes a header; false when there was none. Its row stays, empty (rm is rare). */
  delete(id: string): boolean {
    const row = this.#row(id);
    if (row === NONE) return false;
    this.#byState[this.#states[row]]--;
    this.#states[row] = 255;
    this.#names[row] = "";
    this.#live--;
    const number = this.#ids[row];
    if (Number.isNaN(number)) {
      this.#byOtherId.delete(id);
      this.#otherIds.delete(row);
    } else this.#byNumber[number] = NONE;
    return true;
  }

  /** How many headers there are in each state (states with none left out). */
  countByState(): Map<JobState, number> {
    const counts = new Map<JobState, number>();
    this.#byState.forEach((count, index) => {
      if (count > 0) counts.set(JOB_STATES[index] as JobState, count);
    });
    return counts;
  }

  *values(): IterableIterator<JobHeader> {
    for (let row = 0; row < this.#rows; row++) if (this.#states[row] !== 255) yield this.#header(row);
  }

  #row(id: string): number {
    if (NUMERIC_ID.test(id)) {
      const number = Number(id);
      if (number < this.#byNumber.length && this.#byNumber[number] !== NONE) return this.#byNumber[number];
    }
    return this.#byOtherId.get(id) ?? NONE;
  }

  /**
   * Whether an id goes through the table by number: a whole number not far past the rows held
   * (ids are given out in order, so the table stays about as long as the rows; a stray big one
   * goes through the map).
   */
  #indexable(id: string): boolean {
    return NUMERIC_ID.test(id) && Number(id) <= 16 * (this.#rows + INITIAL_ROWS);
  }

  #header(row: number): JobHeader {
    const number = this.#ids[row];
    const endedAt = this.#numbers[row * 3 + 2];
    const c = this.#counts;
    const counts: TaskCounts = {
      pending: c[row * 6 + 1],
      running: c[row * 6 + 2],
      succeeded: c[row * 6 + 3],
      failed: c[row * 6 + 4],
      cancelled: c[row * 6 + 5],
    };
    return {
      id: Number.isNaN(number) ? (this.#otherIds.get(row) ?? "") : String(number),
      name: this.#names[row],
      owner: this.#ownerNames[this.#owners[row]],
      state: JOB_STATES[this.#states[row]] as JobState,
      priority: this.#numbers[row * 3],
      createdAt: this.#numbers[row * 3 + 1],
      endedAt: Number.isNaN(endedAt) ? null : endedAt,
      taskCount: c[row * 6],
      counts,
      qos: this.#ownerNames[this.#qos[row]],
    };
  }

  #owner(name: string): number {
    let index = this.#ownerIndex.get(name);
    if (index === undefined) {
      index = this.#ownerNames.length;
      this.#ownerNames.push(name);
      this.#ownerIndex.set(name, index);
    }
    return index;
  }

  #grow(rows: number): void {
    if (rows <= this.#states.length) return;
    const capacity = Math.max(rows, this.#states.length * 2);
    this.#ids = resized(this.#ids, capacity);
    this.#states = resized(this.#states, capacity);
    this.#numbers = resized(this.#numbers, capacity * 3);
    this.#counts = resized(this.#counts, capacity * 6);
  }

  #growIndex(size: number): void {
    if (size <= this.#byNumber.length) return;
    const next = new Int32Array(Math.max(size, this.#byNumber.length * 2)).fill(NONE);
    next.set(this.#byNumber);
    this.#byNumber = next;
  }
}

function resized<T extends Float64Array | Uint8Array | Int32Array>(array: T, length: number): T {
  const next = new (array.constructor as new (length: number) => T)(length);
  next.set(array);
  return next;
}
