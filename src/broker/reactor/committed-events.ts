// The events of jobs being submitted, gathered as the reactor reports them committed, so that a
// submit answers its new job's events without reading them back from the store: a round trip to
// PostgreSQL a submit, a query on SQLite. Watched from before the job's handler runs until its
// answer, so every event of the job committed meanwhile is there: its own, and those of a step
// committed in the same batch (a placement that followed it at once).

import type { EventRecord } from "../../common/model/records.ts";

export class CommittedEventsOfJobs {
  /** The jobs watched, each with its events committed so far, in commit order. */
  readonly #watched = new Map<string, EventRecord[]>();

  /** `subscribe` has the listener called with each stored event once committed (the reactor's `event`). */
  constructor(subscribe: (listener: (event: EventRecord) => void) => void) {
    subscribe((event) => this.#watched.get(event.jobId)?.push(event));
  }

  /** Gathers the committed events of `jobId` from now on. */
  watch(jobId: string): void {
    this.#watched.set(jobId, []);
  }

  /**
   * Stops watching `jobId`: the events committed since `watch`, oldest first (at, then id), the
   * order the store's `events` reads them in.
   */
  take(jobId: string): EventRecord[] {
    const events = this.#watched.get(jobId) ?? [];
    this.#watched.delete(jobId);
    return events.sort((a, b) => a.at - b.at || a.id - b.id);
  }
}
