// The jobs that may have work to place, kept in queue order (compareQueueOrder) as they come and
// go, so a scheduling pass never sorts, and each owner's jobs in the same order, so a pass reads
// only as far as it places: with a backlog of 100,000 jobs and one free slot, a pass looks at the
// first job of each owner, not at every job. Jobs that leave (deleted, or found without pending
// work by a pass) stay in the lists, skipped, until a compaction once they outnumber the rest.

import { compareQueueOrder } from "../scheduler/queue-order.ts";
import type { OwnerQueue } from "../scheduler/view.ts";
import type { JobEntry } from "./job-entry.ts";

/** Compaction happens once the jobs left behind in the lists are more than the queued ones and this many. */
export const QUEUE_COMPACTION_SLACK = 1024;

/**
 * Jobs in queue order from `head` on; those before `head` have left. `present`: the jobs from `head`
 * on, queued or not (one that left and comes back before a compaction is still at its place).
 */
class OrderedJobs {
  items: JobEntry[] = [];
  head = 0;
  readonly present = new Set<JobEntry>();

  get length(): number {
    return this.items.length - this.head;
  }

  insert(job: JobEntry): void {
    if (this.present.has(job)) return;
    this.present.add(job);
    const items = this.items;
    // Most jobs arrive last in the order (new, same priority): check the end before searching.
    if (items.length === this.head || compareQueueOrder(items[items.length - 1], job) <= 0) {
      items.push(job);
      return;
    }
    let low = this.head;
    let high = items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareQueueOrder(items[middle], job) <= 0) low = middle + 1;
      else high = middle;
    }
    items.splice(low, 0, job);
  }

  /** Takes a job out of the order (it is inserted again at its new place). */
  remove(job: JobEntry): void {
    if (!this.present.delete(job)) return;
    const index = this.items.indexOf(job, this.head);
    if (index >= 0) this.items.splice(index, 1);
  }

  /** Moves the head past the jobs that are not `members`; the first that is, or null. */
  advance(members: ReadonlySet<JobEntry>): JobEntry | null {
    const items = this.items;
    while (this.head < items.length && !members.has(items[this.head]))
      this.present.delete(items[this.head++]);
    // The jobs before the head are let go once they are half the list (an ended job leaves memory).
    if (this.head > QUEUE_COMPACTION_SLACK && this.head * 2 > items.length) {
      this.items = items.slice(this.head);
      this.head = 0;
    }
    return this.head < this.items.length ? this.items[this.head] : null;
  }

  keepOnly(members: ReadonlySet<JobEntry>): void {
    const kept: JobEntry[] = [];
    for (let i = this.head; i < this.items.length; i++)
      if (members.has(this.items[i])) kept.push(this.items[i]);
    this.items = kept;
    this.head = 0;
    this.present.clear();
    for (const job of kept) this.present.add(job);
  }
}

export class JobQueue {
  readonly #all = new OrderedJobs();
  readonly #byOwner = new Map<string, OrderedJobs>();
  /** The queued jobs. */
  readonly #members = new Set<JobEntry>();

  get size(): number {
    return this.#members.size;
  }

  /** Jobs the queue's order still holds a reference to, queued or left (what a compaction bounds). */
  get held(): number {
    return this.#all.items.length;
  }

  /** Adds a job at its place in the order; a job already queued stays where it is. */
  add(job: JobEntry): void {
    if (this.#members.has(job)) return;
    this.#compactIfSparse();
    this.#members.add(job);
    // A job that left and is back before a compaction is still at its place (insert does nothing).
    this.#all.insert(job);
    let own = this.#byOwner.get(job.owner);
    if (!own) {
      own = new OrderedJobs();
      this.#byOwner.set(job.owner, own);
    }
    own.insert(job);
  }

  /** A job whose priority changed moves to its new place in the order; a queued one stays queued. */
  reorder(job: JobEntry): void {
    this.#all.remove(job);
    this.#byOwner.get(job.owner)?.remove(job);
    if (this.#members.delete(job)) this.add(job);
  }

  delete(job: JobEntry): void {
    if (this.#members.delete(job)) this.#compactIfSparse();
  }

  /** The highest priority queued (an upper bound: a job that has no ready work may count), or null. */
  topPriority(): number | null {
    return this.top()?.priority ?? null;
  }

  /** The first queued job in queue order (it may have no ready work now), or null. */
  top(): JobEntry | null {
    return this.#all.advance(this.#members);
  }

  /** Whether some queued job has ready work now. */
  hasReady(): boolean {
    for (const _ of this.readyJobs()) return true;
    return false;
  }

  /** The queued jobs that have ready work now, in queue order, read lazily. */
  readyJobs(): Iterable<JobEntry> {
    return { [Symbol.iterator]: () => this.#ready(this.#all) };
  }

  /** The queued jobs with ready work, in order, as one list (pool demand, which reads them all). */
  schedulable(): JobEntry[] {
    return [...this.readyJobs()];
  }

  /** Each owner's queued jobs with ready work, in queue order, read as far as a pass needs. */
  ownerQueues(): OwnerQueue[] {
    const queues: OwnerQueue[] = [];
    for (const [owner, own] of this.#byOwner) {
      if (own.advance(this.#members) === null) continue;
      const jobs = this.#ready(own);
      let head = jobs.next();
      queues.push({
        owner,
        peek: () => (head.done ? null : head.value),
        advance: () => {
          if (!head.done) head = jobs.next();
        },
      });
    }
    return queues;
  }

  *#ready(list: OrderedJobs): Generator<JobEntry> {
    const items = list.items;
    for (let i = list.head; i < items.length; i++) {
      const job = items[i];
      if (!this.#members.has(job)) continue;
      if (job.schedulable) yield job;
      else if (job.pending.size === 0 || job.isEnded()) this.#members.delete(job);
    }
  }

  /** Rebuilds the lists without the jobs that left, once those are the most of them. */
  #compactIfSparse(): void {
    if (this.#all.length <= 2 * this.#members.size + QUEUE_COMPACTION_SLACK) return;
    this.#all.keepOnly(this.#members);
    for (const [owner, own] of this.#byOwner) {
      own.keepOnly(this.#members);
      if (own.length === 0) this.#byOwner.delete(owner);
    }
  }
}
