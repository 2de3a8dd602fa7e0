// How long the broker waits for PostgreSQL before it counts the database as unavailable. A
// database that is down or cut off answers with an error at once (a refused or reset connection);
// one that is stalled (the connection open, no byte passing: a frozen server, a network that drops
// packets) would never answer, and a broker waiting on it would hang its requests and keep
// claiming to lead. These bounds turn a stall into an error like the others, which the broker
// answers as "store unavailable" (503) and which ends its lead (server/broker.ts).

import type { PoolConfig, QueryArrayConfig } from "pg";

/** A statement with its own bound (pg reads `query_timeout` on a query too; its types omit it). */
export type BoundedQuery = QueryArrayConfig & { query_timeout?: number };

/**
 * A connection to the record store, or a statement on it (a commit, a lease renewal, a read), that
 * is not answered in this time fails: the request that needed it is answered 503. Below a client's
 * usual 4 s timeout, so a refusal reaches it in time.
 */
export const STORE_ANSWER_MS = 3000;

/**
 * A statement that writes rows gets this much more per row it writes (at most 10,000 a statement,
 * pg-pending-puts.ts: 8 s for a full one), so that a large commit on a slow database is not taken
 * for a stalled one.
 */
export const STORE_ANSWER_MS_PER_ROW = 0.5;

/**
 * The statements of a new leader's load (every live record at once), the reads and deletions that
 * may reach every row of a large job (an ended job's tasks, attempts and events read; a job
 * removed; accounting read or purged) or many files (a job's files dropped, the sweep of dropped
 * ones, the list of every file for a backup), may take this long. The transaction around such a
 * read still starts within STORE_ANSWER_MS, so a link already stalled is found out as soon.
 */
export const STORE_LONG_ANSWER_MS = 60_000;

/** The bound of a statement that writes `rows` rows. */
export function writeAnswerMs(rows: number): number {
  return STORE_ANSWER_MS + Math.ceil(rows * STORE_ANSWER_MS_PER_ROW);
}

/**
 * The database ends a session of the record store that stays silent this long inside a
 * transaction, and releases its locks: a broker cut off in the middle of a commit holds the
 * leadership row (commits lock it) no longer than this, and another broker can then lead.
 */
export const STORE_IDLE_IN_TRANSACTION_MS = 10_000;

/**
 * TCP keepalive on every connection: an idle pooled connection to a database that vanished is
 * found out after this much silence (plus the kernel's probes) instead of at its next use.
 */
export const STORE_KEEPALIVE_MS = 10_000;

/**
 * A statement of a blob transfer (a chunk of at most 256 KiB, a batch of 1 MiB read) that is not
 * answered in this time fails; the agent tries its transfer again.
 */
export const BLOB_STATEMENT_ANSWER_MS = 30_000;

/** The pool settings that bound the record store's waits (see the constants above). */
export function recordStoreBounds(): Pick<
  PoolConfig,
  | "connectionTimeoutMillis"
  | "query_timeout"
  | "idle_in_transaction_session_timeout"
  | "keepAlive"
  | "keepAliveInitialDelayMillis"
> {
  return {
    connectionTimeoutMillis: STORE_ANSWER_MS,
    query_timeout: STORE_ANSWER_MS,
    idle_in_transaction_session_timeout: STORE_IDLE_IN_TRANSACTION_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: STORE_KEEPALIVE_MS,
  };
}

/**
 * The blob store's: the same connection bound and keepalive, a longer one per statement, and no
 * bound on a transaction's silence (a write keeps its transaction open while the upload arrives).
 */
export function blobStoreBounds(): Pick<
  PoolConfig,
  "connectionTimeoutMillis" | "query_timeout" | "keepAlive" | "keepAliveInitialDelayMillis"
> {
  return {
    connectionTimeoutMillis: STORE_ANSWER_MS,
    query_timeout: BLOB_STATEMENT_ANSWER_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: STORE_KEEPALIVE_MS,
  };
}

/**
 * Migrations': the connection bound and keepalive only (a schema change may take long, and a
 * second broker waits on the first's lock), so a broker started while the database is stalled
 * fails at once instead of hanging.
 */
export function migrationBounds(): Pick<
  PoolConfig,
  "connectionTimeoutMillis" | "keepAlive" | "keepAliveInitialDelayMillis"
> {
  return {
    connectionTimeoutMillis: STORE_ANSWER_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: STORE_KEEPALIVE_MS,
  };
}
