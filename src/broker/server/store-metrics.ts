// The store's commits as the leader sees them: how long each group commit took to be durable, and
// how many steps (requests, agents' reports, scheduling passes) it answered at once. A broker whose
// requests are slow while its CPU idles is waiting on these: the store's latency bounds how fast a
// client that sends one request at a time is answered (every change is durable before its answer).

import { Histogram, type Registry } from "prom-client";

/** From half a millisecond (a local fsync) to seconds (a store in trouble). */
export const COMMIT_SECONDS_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** One step alone up to the thousands a busy broker gathers. */
export const COMMIT_STEPS_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024];

export class StoreMetrics {
  readonly #seconds: Histogram;
  readonly #steps: Histogram;

  constructor(registry: Registry) {
    this.#seconds = new Histogram({
      name: "steward_store_commit_seconds",
      help: "Time from a group commit's start to its changes being durable in the store",
      buckets: COMMIT_SECONDS_BUCKETS,
      registers: [registry],
    });
    this.#steps = new Histogram({
      name: "steward_store_commit_steps",
      help: "Steps (requests, agents' reports, scheduling passes) whose changes one group commit made durable",
      buckets: COMMIT_STEPS_BUCKETS,
      registers: [registry],
    });
  }

  /** A commit was durable after `seconds`, answering `steps` steps. */
  committed(seconds: number, steps: number): void {
    this.#seconds.observe(seconds);
    this.#steps.observe(steps);
  }
}
