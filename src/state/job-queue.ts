// The jobs that may have work to place, kept in queue order (compareQueueOrder) as they come and
// go, so a scheduling pass never sorts. Jobs that no longer have ready work leave at the next pass.

import { compareQueueOrder } from "../scheduler/queue-order.ts";
import type { JobEntry } from "./job-entry.ts";

export class JobQueue {
  #jobs: JobEntry[] = [];
  readonly #members = new Set<JobEntry>();
  /** Jobs deleted but still in #jobs: the next pass drops them (a delete does not walk the queue). */
  readonly #deleted = new Set<JobEntry>();

  get size(): number {
    return this.#members.size;
  }

  /** Adds a job at its place in the order; a job already queued stays where it is. */
  add(job: JobEntry): void {
    if (this.#members.has(job)) return;
    this.#members.add(job);
    // Deleted and back before a pass dropped it: it is still at its place.
    if (this.#deleted.delete(job)) return;
    const jobs = this.#jobs;
    // Most jobs arrive last in the order (new, same priority): check the end before searching.
    if (jobs.length === 0 || compareQueueOrder(jobs[jobs.length - 1], job) <= 0) {
      jobs.push(job);
      return;
    }
    let low = 0;
    let high = jobs.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareQueueOrder(jobs[middle], job) <= 0) low = middle + 1;
      else high = middle;
    }
    jobs.splice(low, 0, job);
  }

  /** The highest priority queued (an upper bound: a job deleted since may still count), or null. */
  topPriority(): number | null {
    return this.#jobs.length > 0 ? this.#jobs[0].priority : null;
  }

  /** The queued jobs that have ready work now, in order; the others leave the queue. */
  schedulable(): JobEntry[] {
    const kept: JobEntry[] = [];
    let dropped = false;
    for (const job of this.#jobs) {
      if (this.#deleted.size > 0 && this.#deleted.delete(job)) {
        dropped = true;
        continue;
      }
      if (job.schedulable) kept.push(job);
      else if (job.pending.size === 0 || job.isEnded()) {
        this.#members.delete(job);
        dropped = true;
      } else kept.push(job);
    }
    if (dropped) this.#jobs = kept;
    return kept.filter((job) => job.schedulable);
  }

  delete(job: JobEntry): void {
    if (this.#members.delete(job)) this.#deleted.add(job);
  }
}
