// One event being handled: the state to change, the clock, and what the handler has decided so
// far, changes to commit and effects to perform after the commit.

import { type JobEvent, renderEvent } from "../model/events.ts";
import type { EventRecord } from "../model/records.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import type { JobEntry } from "../state/job-entry.ts";
import type { Change } from "../store/store.ts";
import type { Effect } from "./effects.ts";

export class Step {
  readonly state: ClusterState;
  readonly now: number;
  readonly changes: Change[] = [];
  readonly effects: Effect[] = [];
  /** Whether a scheduling pass should follow (a slot freed, a task became ready). */
  schedule = false;
  readonly #random: () => number;

  constructor(state: ClusterState, now: number, random: () => number) {
    this.state = state;
    this.now = now;
    this.#random = random;
  }

  random(): number {
    return this.#random();
  }

  change(change: Change): void {
    this.changes.push(change);
  }

  effect(effect: Effect): void {
    this.effects.push(effect);
  }

  /**
   * Adds an event to the job's history: its kind and data, and the message rendered from them,
   * stored with them so that a later version shows it as it was written.
   */
  event(job: JobEntry, event: JobEvent): EventRecord {
    const { kind, data } = event;
    const record: EventRecord = {
      id: 0,
      jobId: job.id,
      at: this.now,
      kind,
      data,
      message: renderEvent(event),
    };
    this.changes.push({ op: "addEvent", event: record });
    return record;
  }
}
