// The SQLite store's writer thread: one connection that does every write (sqlite-writes.ts), one
// request at a time in the order they came. A commit's fsync waits here, not on the server's
// event loop, which meanwhile answers requests and gathers the next group commit.

import type { DatabaseSync } from "node:sqlite";
import { isMainThread, workerData } from "node:worker_threads";
import { RequestThread, serveRequests, type ThreadFailure } from "../threads/request-thread.ts";
import { openConnection } from "./sqlite-statements.ts";
import { SqliteWrites } from "./sqlite-writes.ts";
import { type Change, StaleTermError } from "./store.ts";

export type WriteRequest =
  | { op: "beginTerm" }
  /** The changes as JSON text: cheaper to send to the thread than the records (structured clone), and to read there. */
  | { op: "commit"; term: number; changes: string }
  | { op: "reserveIds"; term: number; sequence: string; count: number }
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
  close(): Promise<void>;
}

/** The store's side: the writer thread of the database at `path`. */
export class SqliteWriterThread implements SqliteWriter {
  readonly #thread: RequestThread<WriteRequest>;

  constructor(path: string) {
    const data: WriterData = { sqliteWriter: path };
    this.#thread = new RequestThread<WriteRequest>(new URL(import.meta.url), data, {
      name: "SQLite writer",
      revive: reviveStaleTerm,
    });
  }

  request<T>(request: WriteRequest): Promise<T> {
    return this.#thread.request<T>(request);
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

  /** The connection is the store's, closed by it. */
  async close(): Promise<void> {}
}
