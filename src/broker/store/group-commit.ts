// Group commit: every acknowledged change must be durable (guarantee 1), and one fsync per request
// would cap the server at a few hundred requests a second. Pushes that arrive while a commit is in
// flight (or in the same tick) wait and are committed together, one transaction and one fsync for all.

import { coalescePuts } from "./coalesce-puts.ts";
import type { Change, Store } from "./store.ts";

interface Pending {
  changes: readonly Change[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class GroupCommitter {
  readonly store: Store;
  /** The term every commit names: a commit refused for an older term fails its pushes with StaleTermError. */
  readonly term: number;
  /** Calls of store.commit made so far (batches with no changes at all are not committed). */
  commits = 0;
  #queue: Pending[] = [];
  #busy = false;
  /** The batch whose commit is in flight. */
  #inFlight: Pending[] = [];
  /** Set by close: every push fails with it from then on. */
  #closedWith: { error: unknown } | null = null;
  /**
   * Called as a batch is about to be taken (reactor.ts: a scheduling pass that is due runs then):
   * what it pushes joins this batch instead of waiting for the next commit.
   */
  beforeBatch: (() => void) | null = null;
  /**
   * Called after each commit that wrote something: how long the store took to make it durable
   * (seconds, from the call to its answer) and how many steps (pushes with changes) it answered
   * (server.ts: metrics).
   */
  onCommitted: ((seconds: number, steps: number) => void) | null = null;
  /**
   * Called when a batch fails, before its pushes hear it (reactor.ts: the changes in memory not
   * committed are taken back, and the pushes queued behind the batch abandoned, at once).
   */
  onFailed: ((error: unknown) => void) | null = null;

  constructor(store: Store, term: number) {
    this.store = store;
    this.term = term;
  }

  /**
   * Resolves once the batch holding these changes has committed; rejects with the batch's error if
   * it failed. The batch is one transaction: a bad change fails every push that shares its batch.
   */
  push(changes: readonly Change[]): Promise<void> {
    const closed = this.#closedWith;
    if (closed) return Promise.reject(closed.error);
    return new Promise((resolve, reject) => {
      this.#queue.push({ changes, resolve, reject });
      this.#schedule();
    });
  }

  /**
   * No more commits (this server stopped leading): the pushes waiting, those of the batch in flight
   * and every later one fail with `error` at once. The batch in flight may still be committed by
   * the store (its answer is no longer awaited): a request answered with `error` was not
   * acknowledged, and may or may not have been done, as with any answer that is lost.
   */
  close(error: unknown): void {
    if (this.#closedWith) return;
    this.#closedWith = { error };
    const waiting = [...this.#inFlight, ...this.#queue];
    this.#inFlight = [];
    this.#queue = [];
    for (const pending of waiting) pending.reject(error);
  }

  /** Resolves when everything pushed so far has been committed or has failed (the failures go to their pushes). */
  flush(): Promise<void> {
    if (this.#closedWith || (!this.#busy && this.#queue.length === 0)) return Promise.resolve();
    return new Promise((resolve) => {
      this.#queue.push({ changes: [], resolve, reject: () => resolve() });
      this.#schedule();
    });
  }

  /**
   * Rejects with `error` every push not yet taken into a batch (a flush's marker resolves): the
   * owner's way to drop what was pushed on top of a batch that failed.
   */
  abandonQueued(error: unknown): void {
    const queued = this.#queue;
    this.#queue = [];
    for (const pending of queued) pending.reject(error);
  }

  #schedule(): void {
    if (this.#busy) return;
    this.#busy = true;
    // node:sqlite commits synchronously: waiting for the next turn of the event loop lets the pushes
    // of this tick (and of the I/O callbacks that run before it) join the batch.
    setImmediate(() => void this.#commitBatch());
  }

  async #commitBatch(): Promise<void> {
    try {
      this.beforeBatch?.();
    } catch (error) {
      // What it failed at is not this batch's: the batch is committed all the same.
      throwOnLoop(error);
    }
    const batch = this.#queue;
    this.#queue = [];
    this.#inFlight = batch;
    // A record put by several pushes (or twice by one) is written once, at its last put.
    const changes = coalescePuts(batch.flatMap((pending) => pending.changes));
    let seconds: number | null = null;
    try {
      if (changes.length > 0) {
        const start = performance.now();
        await this.store.commit(this.term, changes);
        this.commits++;
        seconds = (performance.now() - start) / 1000;
      }
      for (const pending of batch) pending.resolve();
    } catch (error) {
      try {
        this.onFailed?.(error);
      } catch (thrown) {
        throwOnLoop(thrown);
      }
      for (const pending of batch) pending.reject(error);
    }
    this.#inFlight = [];
    const listener = this.onCommitted;
    if (seconds !== null && listener) {
      // The steps: pushes with changes (a flush's marker has none).
      const steps = batch.reduce((count, pending) => count + (pending.changes.length > 0 ? 1 : 0), 0);
      try {
        listener(seconds, steps);
      } catch (error) {
        // The commit is durable and answered all the same.
        throwOnLoop(error);
      }
    }
    this.#busy = false;
    if (this.#queue.length > 0) this.#schedule();
  }
}

/** Throws `error` from a turn of its own, where an error of the event loop goes: not into a batch. */
function throwOnLoop(error: unknown): void {
  setImmediate(() => {
    throw error;
  });
}
