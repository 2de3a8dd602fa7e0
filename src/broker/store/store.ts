// The durable store. Every state change of the server goes through `commit`, and nothing is
// acknowledged before its commit returns (guarantee 1). The interface is asynchronous so that
// PostgreSQL can implement it as well as SQLite; both must pass test/conformance/store.test.ts.
//
// Terms fence a deposed leader: a server takes a term at start (beginTerm) and names it in every
// commit; the store refuses, in the same transaction, a commit whose term is older than the newest
// it has seen, so two servers on one database never both change it.

import type {
  AccountingQuery,
  AccountingRecord,
  AttemptRecord,
  CheckpointPart,
  EventRecord,
  HostRecord,
  JobHeader,
  JobRecord,
  SecretRecord,
  TaskRecord,
  TokenRecord,
  UsageSample,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { TaskState } from "../../common/model/states.ts";

/** One change. Puts are upserts keyed by the record's identity, so replaying a batch is harmless. */
export type Change =
  | { op: "putJob"; job: JobRecord }
  | { op: "putTasks"; tasks: TaskRecord[] }
  /**
   * Tasks 0 to count-1 of a new job, each as newTask makes it in `state` (a large array's): kept
   * as one range, not a row a task (new-task-ranges.ts); every load reads them as those tasks.
   */
  | { op: "putNewTasks"; jobId: string; count: number; state: TaskState }
  | { op: "putAttempt"; attempt: AttemptRecord }
  /** Inserts the event; the store sets its `id` (increasing in commit order) on the record. */
  | { op: "addEvent"; event: EventRecord }
  | { op: "putHost"; host: HostRecord }
  | { op: "deleteHost"; name: string }
  /** Tokens are never deleted: a revoked one is kept with its revokedAt. */
  | { op: "putToken"; token: TokenRecord }
  /** A user's secret, new or with a new value (keyed by owner and name). */
  | { op: "putSecret"; secret: SecretRecord }
  | { op: "deleteSecret"; owner: string; name: string }
  /** A new workflow (never changed after: its jobs' states are their own). */
  | { op: "putWorkflow"; workflow: WorkflowRecord }
  /** A committed checkpoint manifest (a rank's part of a multi-node task's generation). */
  | { op: "putCheckpointPart"; part: CheckpointPart }
  | { op: "deleteCheckpointPart"; jobId: string; taskIndex: number; rank: number; generation: number }
  /**
   * Removes the job with its tasks, attempts, events and checkpoint parts; its ended attempts are
   * kept as accounting rows (see `accounting`).
   */
  | { op: "deleteJob"; jobId: string }
  /** Drops the accounting rows of removed jobs' attempts that ended before `endedBefore`. */
  | { op: "purgeAccounting"; endedBefore: number }
  | { op: "setMeta"; key: string; value: string };

/**
 * Everything the server needs to recover at start (GridWay's gw_job_recover). From `load()`, every
 * record; from `loadLive()`, `jobs`, `tasks` and `attempts` hold the live jobs only (not ended, or
 * with an attempt not ended), and `ended` and `usage` stand for the rest.
 */
export interface StoreSnapshot {
  jobs: JobRecord[];
  tasks: TaskRecord[];
  attempts: AttemptRecord[];
  hosts: HostRecord[];
  tokens: TokenRecord[];
  /** Every user's secrets (from load and loadLive alike), by owner then name; absent: none. */
  secrets?: SecretRecord[];
  meta: Record<string, string>;
  /** Committed checkpoint parts kept (of the live jobs only, from loadLive), by job, task, rank, generation. */
  checkpointParts: CheckpointPart[];
  /** Every workflow (from load and loadLive alike: a workflow is small and outlives its jobs). */
  workflows?: WorkflowRecord[];
  /** Headers of the jobs left out of `jobs` (loadLive only). */
  ended?: JobHeader[];
  /** Every ended attempt's cpu time, summed (loadLive only): fair share's history. */
  usage?: UsageSample[];
}

/** One job as stored, with its tasks (by index) and attempts (by task, then number). */
export interface StoredJob {
  job: JobRecord;
  tasks: TaskRecord[];
  attempts: AttemptRecord[];
  /** Its tasks' checkpoint parts kept (absent from a store that did not read them). */
  checkpointParts?: CheckpointPart[];
}

/** One task of a stored job, with its attempts (by number). */
export interface StoredTask {
  task: TaskRecord;
  attempts: AttemptRecord[];
}

/** A commit or reservation named a term older than one the store has seen: this server is no longer leader. */
export class StaleTermError extends Error {
  readonly term: number;
  readonly newest: number;
  constructor(term: number, newest: number) {
    super(`term ${term} is older than term ${newest}: another server leads`);
    this.term = term;
    this.newest = newest;
  }
}

export interface Store {
  readonly kind: "sqlite" | "postgres";
  /** Opens the store and applies pending schema migrations. */
  open(): Promise<void>;
  /** All records; jobs ordered by createdAt then id, tasks by job then index, attempts by job, task, number. */
  load(): Promise<StoreSnapshot>;
  /**
   * What a server starts from: the live jobs whole, the ended ones as headers, the ended attempts
   * as usage sums, and every host, token, secret and meta entry; one consistent read.
   */
  loadLive(): Promise<StoreSnapshot>;
  /** One job with its tasks and attempts, or null when there is no such job. */
  loadJob(id: string): Promise<StoredJob | null>;
  /**
   * One job's record without its tasks and attempts, or null: what a job's summary needs, read
   * without a million-task array's rows.
   */
  loadJobRecord(id: string): Promise<JobRecord | null>;
  /** One task of a job with its attempts, or null when the job has no such task. */
  loadTask(jobId: string, index: number): Promise<StoredTask | null>;
  /** The state of each of a job's tasks, by index (none for a job that has no tasks, or no job). */
  loadTaskStates(jobId: string): Promise<TaskState[]>;
  /** The id of the job this owner submitted with this Idempotency-Key, or null. */
  findSubmission(owner: string, submitKey: string): Promise<string | null>;
  /** The newest term seen plus one, recorded as the newest in its own transaction; returns it. */
  beginTerm(): Promise<number>;
  /** The newest term the store has seen (0 for a new store). */
  currentTerm(): Promise<number>;
  /**
   * Applies all changes in one transaction, in order: all or nothing, durable when the promise
   * resolves. Throws StaleTermError, changing nothing, when `term` is older than the newest seen;
   * a newer term becomes the newest.
   */
  commit(term: number, changes: readonly Change[]): Promise<void>;
  /**
   * Reserves `count` consecutive ids of a named sequence (e.g. "job") and returns the first. Ids
   * of a sequence never repeat, across restarts and terms; the first id of a new sequence is 1.
   * Same term rule as commit.
   */
  reserveIds(term: number, sequence: string, count: number): Promise<number>;
  /**
   * Ended attempts (of the jobs held, and the rows kept of removed ones) that ended at or after
   * `since`, of `owner` when given, oldest end first, at most `limit`.
   */
  accounting(query: AccountingQuery): Promise<AccountingRecord[]>;
  /** Events of one job, oldest first (at, then id). */
  events(jobId: string): Promise<EventRecord[]>;
  /** Events with an id above `after`, in id order, at most `limit`, of one job when `jobId` is given. */
  eventsAfter(after: number, limit: number, jobId?: string): Promise<EventRecord[]>;
  close(): Promise<void>;
}

/** Who leads a store shared by several brokers, as the store last recorded it. */
export interface LeadershipInfo {
  term: number;
  /** Where the leader answers, or null when none has said. */
  leader: string | null;
  /** Whether the leader's lease still runs (by the database's clock). */
  leaseValid: boolean;
}

/**
 * Leader election through the store (PostgreSQL): a lease row with an expiry, by the database's
 * clock. A lease row rather than a session advisory lock: a broker that is paused or cut off keeps
 * its session (and so its lock) open, while its lease runs out on its own.
 */
export interface Elections {
  /**
   * Takes the lead with the next term when no lease runs, or when the lease is held under this
   * same address (a predecessor that is gone: this process holds its port; the new term fences it
   * anyway); the new term, or null when another leads.
   */
  tryLead(leader: string, leaseSeconds: number): Promise<number | null>;
  /** Extends the lease of `term`; false when another term has taken over. */
  renewLease(term: number, leaseSeconds: number): Promise<boolean>;
  leadership(): Promise<LeadershipInfo>;
  /** Ends the lease of `term` at once (a clean shutdown), so a standby takes over without waiting. */
  resign(term: number): Promise<void>;
}

export function hasElections(store: Store): store is Store & Elections {
  return "tryLead" in store && typeof store.tryLead === "function";
}
