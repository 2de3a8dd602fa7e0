// One event being handled: the state to change, the clock, and what the handler has decided so
// far, changes to commit and effects to perform after the commit. Handlers change durable state
// only through `write` (writes.ts), which records each change as it makes it and notes how to take
// it back. The rule: a handler's writes take effect only if it returns. One that throws, before or
// after some of its writes, has its writes taken back (`handle`), its changes and effects dropped:
// nothing is committed and memory is as before the event, so it may check as it goes. A step whose
// commit fails is taken back the same way, after it returned (Handled.rollback, reactor.ts).

import { type JobEvent, renderEvent } from "../../common/model/events.ts";
import type { EventRecord } from "../../common/model/records.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import type { JobEntry } from "../state/job-entry.ts";
import type { Change } from "../store/store.ts";
import type { Effect } from "./effects.ts";
import { StateWrites } from "./writes.ts";

export class Step {
  readonly state: ClusterState;
  readonly now: number;
  /** The changes to commit, in order: made by `write` and `event` only. */
  readonly #changes: Change[] = [];
  readonly effects: Effect[] = [];
  /** The one way to change durable state (writes.ts). */
  readonly write: StateWrites;
  /** Whether a scheduling pass should follow (a slot freed, a task became ready). */
  schedule = false;
  readonly #random: () => number;

  constructor(state: ClusterState, now: number, random: () => number) {
    this.state = state;
    this.now = now;
    this.#random = random;
    this.write = new StateWrites(state, now, this.#changes);
  }

  get changes(): readonly Change[] {
    return this.#changes;
  }

  random(): number {
    return this.#random();
  }

  effect(effect: Effect): void {
    this.effects.push(effect);
  }

  /**
   * Runs one part of the handler all or nothing (one report of several handled in one step): when
   * `part` throws, what it wrote is taken back and the changes and effects it added are dropped,
   * the rest of the step standing, and its error is returned; null when it returned.
   */
  allOrNothing(part: () => void): unknown {
    const mark = this.write.mark();
    const changes = this.#changes.length;
    const effects = this.effects.length;
    try {
      part();
      return null;
    } catch (error) {
      this.write.rollback(mark);
      this.#changes.length = changes;
      this.effects.length = effects;
      return error;
    }
  }

  /**
   * Notes how to take back a change to the reactor's bookkeeping of the moment made in this step,
   * should the handler throw (writes.ts): one a later step decides by (a gang's ranks, room kept).
   */
  onRollback(undo: () => void): void {
    this.write.onRollback(undo);
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
    this.#changes.push({ op: "addEvent", event: record });
    return record;
  }
}

/** What one handler decided: its answer, the changes to commit, the effects to perform after. */
export interface Handled<T> {
  result: T;
  changes: readonly Change[];
  effects: Effect[];
  /** Whether a scheduling pass should follow. */
  schedule: boolean;
  /**
   * Takes back what the handler did to memory (its writes, newest first): for a step whose commit
   * failed, once every step handled after it is taken back too (reactor.ts).
   */
  rollback: () => void;
}

/**
 * Runs one handler over the state at `now`: a pure function of (state, event, now) to changes and
 * effects, with no store and no timers (the reactor commits the changes and performs the effects).
 * A handler that throws has its writes taken back before the error goes on (all or nothing).
 */
export function handle<T>(
  state: ClusterState,
  now: number,
  handler: (step: Step) => T,
  random: () => number = Math.random,
): Handled<T> {
  const step = new Step(state, now, random);
  let result: T;
  try {
    result = handler(step);
  } catch (error) {
    step.write.rollback();
    throw error;
  }
  return {
    result,
    changes: step.changes,
    effects: step.effects,
    schedule: step.schedule,
    rollback: () => step.write.rollback(),
  };
}
