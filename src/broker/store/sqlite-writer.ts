// The SQLite store's writer thread: one connection that does every write it is sent
// (sqlite-writes.ts), one request at a time in the order they came. A large commit's work and
// fsync wait there, not on the server's event loop, which meanwhile answers requests and gathers
// the next group commit. A small commit with nothing waiting in the thread is done on the store's
// own connection instead (SqliteWriterSplit): handing it to the thread and back cost more of the
// machine than the commit (two wake-ups of a thread, the changes as text both ways).

import type { DatabaseSync } from "node:sqlite";
import { isMainThread, workerData } from "node:worker_threads";
import { RequestThread, serveRequests, type ThreadFailure } from "../threads/request-thread.ts";
import { openConnection } from "./sqlite-statements.ts";
import { SqliteWrites } from "./sqlite-writes.ts";
import { type Change, StaleTermError } from "./store.ts";
import { WriteShare, type WriteShareOptions } from "./write-share.ts";

export type WriteRequest =
  | { op: "beginTerm" }
  /** The changes as JSON text: cheaper to send to the thread than the records (structured clone), and to read there. */
  | { op: "commit"; term: number; changes: string }
  | { op: "reserveIds"; term: number; sequence: string; count: number }
  | { op: "checkpoint" }
  | { op: "close" };

interface WriterData {
  sqliteWriter: string;
}

/** Does one write request on `writes`; "close" closes the connection when `closes` says so. */
function write(writes: SqliteWrites, request: WriteRequest, closes: boolean): unknown {
  switch (request.op) {
    case "beginTerm":
      return writes.beginTerm();
    case "commit":
      return writes.commit(request.term, JSON.parse(request.changes) as Change[]);
    case "reserveIds":
      return writes.reserveIds(request.term, request.sequence, request.count);
    case "checkpoint":
      writes.checkpoint();
      return null;
    case "close":
      if (closes) writes.close();
      return null;
  }
}

function serve(path: string): void {
  const writes = new SqliteWrites(openConnection(path));
  serveRequests<WriteRequest>(
    (request) => write(writes, request, true),
    (request) => request.op === "close",
  );
}

if (!isMainThread && (workerData as Partial<WriterData> | null)?.sqliteWriter)
  serve((workerData as WriterData).sqliteWriter);

function reviveStaleTerm(failure: ThreadFailure): Error | null {
  const { term, newest } = failure.fields;
  return failure.name === "StaleTermError" && typeof term === "number" && typeof newest === "number"
    ? new StaleTermError(term, newest)
    : null;
}

/** Where the store sends its writes. */
export interface SqliteWriter {
  request<T>(request: WriteRequest): Promise<T>;
  /** Applies the changes in one transaction; the ids of the events added, in their order. */
  commit(term: number, changes: readonly Change[]): Promise<number[]>;
  close(): Promise<void>;
}

/**
 * The most rows a commit done on the store's own connection writes (SqliteWriterSplit): the time
 * it holds the event loop grows with them (about 10 to 20 µs a row here, besides the fsync).
 */
export const COMMIT_HERE_MAX_ROWS = 8;

/**
 * Commits done on the store's own connection between two checkpoints, which the writer thread does
 * (that connection never does one itself: copying the log's pages to the database and syncing it
 * would hold the event loop for milliseconds). A short task's commit adds a few pages to the log:
 * about what SQLite's own threshold (1,000 pages) lets it grow to.
 */
export const COMMITS_HERE_A_CHECKPOINT = 100;

/** The rows a commit writes: a task each for a put of tasks, one for any other change. */
export function rowsOf(changes: readonly Change[]): number {
  let rows = 0;
  for (const change of changes) rows += change.op === "putTasks" ? change.tasks.length : 1;
  return rows;
}

/** The store's side: the writer thread of the database at `path`. */
export class SqliteWriterThread implements SqliteWriter {
  readonly #thread: RequestThread<WriteRequest>;

  /** `served`: told the ms the thread spent on each write it answers. */
  constructor(path: string, served?: (busyMs: number) => void) {
    const data: WriterData = { sqliteWriter: path };
    this.#thread = new RequestThread<WriteRequest>(new URL(import.meta.url), data, {
      name: "SQLite writer",
      revive: reviveStaleTerm,
      ...(served ? { served } : {}),
    });
  }

  request<T>(request: WriteRequest): Promise<T> {
    return this.#thread.request<T>(request);
  }

  commit(term: number, changes: readonly Change[]): Promise<number[]> {
    return this.#thread.request<number[]>({ op: "commit", term, changes: JSON.stringify(changes) });
  }

  /** Closes the writer's connection (after the writes sent before) and ends the thread. */
  close(): Promise<void> {
    return this.#thread.close({ op: "close" });
  }
}

/**
 * Writes on the store's own connection, in its thread: for an in-memory database, which no other
 * connection sees (tests use them; nothing waits for a disk there).
 */
export class SqliteWriterHere implements SqliteWriter {
  readonly #writes: SqliteWrites;

  constructor(db: DatabaseSync) {
    this.#writes = new SqliteWrites(db);
  }

  async request<T>(request: WriteRequest): Promise<T> {
    return write(this.#writes, request, false) as T;
  }

  async commit(term: number, changes: readonly Change[]): Promise<number[]> {
    return this.#writes.commit(term, changes);
  }

  /** The connection is the store's, closed by it. */
  async close(): Promise<void> {}
}

/**
 * A database file's writes: a commit of at most COMMIT_HERE_MAX_ROWS rows on the store's own
 * connection, in its thread, when no request waits in the writer thread (so the writes keep the
 * order they were asked in: one done here is done before any sent later, and none sent before it
 * is still waiting) and the writes have lately taken a small share of the time (write-share.ts);
 * everything else in the writer thread. The same transaction either way, on
 * the same file with the same synchronous=FULL: resolved, it is on disk.
 */
export class SqliteWriterSplit implements SqliteWriter {
  readonly #here: SqliteWrites;
  readonly #thread: SqliteWriterThread;
  readonly #maxRowsHere: number;
  readonly #commitsACheckpoint: number;
  /** Whether the writes leave the event loop time for small commits (write-share.ts). */
  readonly #share: WriteShare;
  /** Requests sent to the thread and not yet answered. */
  #waiting = 0;
  #commitsHereSinceCheckpoint = 0;

  /** `db`: the store's own connection; its automatic checkpoints are turned off (the thread does them). */
  constructor(
    db: DatabaseSync,
    path: string,
    options: { maxRowsHere?: number; commitsACheckpoint?: number; share?: WriteShareOptions } = {},
  ) {
    db.exec("PRAGMA wal_autocheckpoint = 0");
    this.#here = new SqliteWrites(db);
    this.#maxRowsHere = options.maxRowsHere ?? COMMIT_HERE_MAX_ROWS;
    this.#commitsACheckpoint = options.commitsACheckpoint ?? COMMITS_HERE_A_CHECKPOINT;
    this.#share = new WriteShare(performance.now(), options.share);
    this.#thread = new SqliteWriterThread(path, (busyMs) => this.#share.wrote(busyMs));
  }

  request<T>(request: WriteRequest): Promise<T> {
    return this.#inThread(this.#thread.request<T>(request));
  }

  async commit(term: number, changes: readonly Change[]): Promise<number[]> {
    const start = performance.now();
    if (this.#waiting > 0 || rowsOf(changes) > this.#maxRowsHere || !this.#share.commitsHere(start))
      return this.#inThread(this.#thread.commit(term, changes));
    let eventIds: number[];
    try {
      eventIds = this.#here.commit(term, changes);
    } finally {
      this.#share.wrote(performance.now() - start);
    }
    if (++this.#commitsHereSinceCheckpoint >= this.#commitsACheckpoint) {
      this.#commitsHereSinceCheckpoint = 0;
      // Not waited for; one that fails leaves the log longer until the next.
      this.request({ op: "checkpoint" }).catch(() => {});
    }
    return eventIds;
  }

  /** Closes the thread's connection (after the writes sent before); the store closes its own. */
  close(): Promise<void> {
    return this.#thread.close();
  }

  async #inThread<T>(answer: Promise<T>): Promise<T> {
    this.#waiting++;
    try {
      return await answer;
    } finally {
      this.#waiting--;
    }
  }
}
