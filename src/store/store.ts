// The durable store. Every state change of the server goes through `commit`, and nothing is
// acknowledged before its commit returns (guarantee 1). The interface is asynchronous so that
// PostgreSQL can implement it as well as SQLite; both must pass test/conformance/store.test.ts.

import type { AttemptRecord, EventRecord, HostRecord, JobRecord, TaskRecord } from "../model/records.ts";

/** One change. Puts are upserts keyed by the record's identity, so replaying a batch is harmless. */
export type Change =
  | { op: "putJob"; job: JobRecord }
  | { op: "putTasks"; tasks: TaskRecord[] }
  | { op: "putAttempt"; attempt: AttemptRecord }
  | { op: "addEvent"; event: EventRecord }
  | { op: "putHost"; host: HostRecord }
  | { op: "deleteHost"; name: string }
  /** Removes the job with its tasks, attempts and events. */
  | { op: "deleteJob"; jobId: string }
  | { op: "setMeta"; key: string; value: string };

/** Everything the server needs to recover at start (GridWay's gw_job_recover). */
export interface StoreSnapshot {
  jobs: JobRecord[];
  tasks: TaskRecord[];
  attempts: AttemptRecord[];
  hosts: HostRecord[];
  meta: Record<string, string>;
}

export interface Store {
  readonly kind: "sqlite" | "postgres";
  /** Opens the store and applies pending schema migrations. */
  open(): Promise<void>;
  /** All records; jobs ordered by createdAt then id, tasks by job then index, attempts by job, task, number. */
  load(): Promise<StoreSnapshot>;
  /** Applies all changes in one transaction, in order: all or nothing, durable when the promise resolves. */
  commit(changes: readonly Change[]): Promise<void>;
  /** Events of one job, oldest first (at, then insertion order). */
  events(jobId: string): Promise<EventRecord[]>;
  close(): Promise<void>;
}
