// Blobs in PostgreSQL, beside the records of the same schema (tables from migration
// 004_blobs.sql, applied when the PostgresStore of that schema opens): every broker on the store
// reaches every input, output, log and checkpoint, with nothing else to share or back up.
//
// Bytes move chunk by chunk, never a whole blob in memory:
// - write: one transaction inserts the chunks (BLOB_CHUNK_BYTES each) as the stream delivers them
//   under a new blob id, then makes that id the key's current blob and marks the old one dropped.
//   Readers see the old blob or the new one; a failed write leaves nothing behind (ROLLBACK).
// - read: looks the key up once, then fetches about READ_BATCH_BYTES at a time by byte offset, each
//   in its own short query, so a slow HTTP client holds no connection and no transaction open.
// - append: one chunk row per append, in one statement when the offset is the current size (logs,
//   every 0.4 s per running attempt); resends and first appends take a short transaction.
// A replaced or deleted blob's bytes stay for a grace period (default 10 minutes) before a sweep
// deletes them, so a reader already streaming them finishes.
//
// Its own connection pool rather than the record store's: a write holds a connection for as long
// as its upload takes, and ten slow uploads must not leave the broker's commits waiting.

import { Readable } from "node:stream";
import { escapeIdentifier, Pool, type PoolClient, type QueryConfig, TypeOverrides, types } from "pg";
import { monotonicMs } from "../../common/time/clocks.ts";
import { checkBlobKey, compareKeys, trimPrefix } from "./blob-key-rules.ts";
import { type BlobInfo, BlobNotFoundError, type BlobStore } from "./blobs.ts";
import { KeyedLock } from "./keyed-lock.ts";
import { blobStoreBounds, STORE_LONG_ANSWER_MS } from "./pg-bounds.ts";
import { inTransaction } from "./pg-transaction.ts";
import { splitSchemaParameter } from "./postgres.ts";

/** Bytes per chunk row of a written blob: large enough that 1 GB is 4,096 inserts, small enough to buffer. */
export const BLOB_CHUNK_BYTES = 256 * 1024;
/** Bytes a reader fetches per query (plus at most one chunk that straddles the end). */
export const READ_BATCH_BYTES = 1024 * 1024;
/** How long a replaced or deleted blob's bytes stay for readers already streaming them. */
export const DROPPED_GRACE_MS = 10 * 60_000;
/** How often writes and deletes trigger a sweep of dropped blobs past their grace. */
export const SWEEP_EVERY_MS = 60_000;
/** Connections for transfers; each write holds one for the length of its upload. */
export const BLOB_POOL_SIZE = 16;
/** First key of the advisory lock that orders the writers of one key ("Blob"). */
const BLOB_LOCK_CLASS = 0x426c6f62;

// bigint columns (ids, sizes, offsets) come back as strings by default; they hold JavaScript numbers.
const TYPES = new TypeOverrides();
TYPES.setTypeParser(types.builtins.INT8, Number);

const SQL = {
  current: "SELECT id, bytes FROM blobs WHERE key = $1 AND dropped_at IS NULL",
  currentForUpdate: "SELECT id, bytes FROM blobs WHERE key = $1 AND dropped_at IS NULL FOR UPDATE",
  nextId: "SELECT nextval(pg_get_serial_sequence('blobs', 'id')) AS id",
  insertChunk: "INSERT INTO blob_chunks (blob_id, at, data) VALUES ($1, $2, $3)",
  // The chunks from the one holding byte $2 up to (not including) those starting at $3 or later.
  chunks:
    "SELECT at, data FROM blob_chunks WHERE blob_id = $1 " +
    "AND at >= coalesce((SELECT max(at) FROM blob_chunks WHERE blob_id = $1 AND at <= $2), 0) " +
    "AND at < $3 ORDER BY at",
  lockKey: `SELECT pg_advisory_xact_lock(${BLOB_LOCK_CLASS}, hashtext($1))`,
  dropKey: "UPDATE blobs SET dropped_at = now() WHERE key = $1 AND dropped_at IS NULL",
  insertBlob: "INSERT INTO blobs (id, key, bytes) VALUES ($1, $2, $3)",
  newBlob: "INSERT INTO blobs (key, bytes) VALUES ($1, 0) RETURNING id",
  setBytes: "UPDATE blobs SET bytes = $2 WHERE id = $1",
  // The usual append: the UPDATE is both the check (the size is still $2, re-checked on the newest
  // row version if another append got there first) and the row lock; the chunk goes in only then.
  appendAtEnd:
    "WITH b AS (UPDATE blobs SET bytes = bytes + $4 WHERE key = $1 AND dropped_at IS NULL AND bytes = $2 " +
    "RETURNING id) INSERT INTO blob_chunks (blob_id, at, data) SELECT id, $2, $3 FROM b",
  // A folder: the key itself, or the byte range of keys that start with "prefix/" ("0" follows "/").
  list: 'SELECT key, bytes FROM blobs WHERE dropped_at IS NULL AND (key = $1 OR (key >= $2 COLLATE "C" AND key < $3 COLLATE "C"))',
  listAll: "SELECT key, bytes FROM blobs WHERE dropped_at IS NULL",
  dropPrefix:
    "UPDATE blobs SET dropped_at = now() WHERE dropped_at IS NULL " +
    'AND (key = $1 OR (key >= $2 COLLATE "C" AND key < $3 COLLATE "C"))',
  sweep: "DELETE FROM blobs WHERE dropped_at <= now() - make_interval(secs => $1::float8 / 1000)",
} as const;

type StatementName = keyof typeof SQL;

function query(name: StatementName, values: unknown[]): QueryConfig {
  // Named: each pooled connection parses and plans a statement once.
  return { name: `steward_blob_${name}`, text: SQL[name], values };
}

/** `statement` with the long bound (pg-bounds.ts: pg reads `query_timeout` on a query too). */
function longBound(statement: QueryConfig): QueryConfig {
  return Object.assign(statement, { query_timeout: STORE_LONG_ANSWER_MS });
}

/** The values for SQL.list and SQL.dropPrefix: the key, and the range of keys below it. */
function folderRange(prefix: string): [string, string, string] {
  return [prefix, `${prefix}/`, `${prefix}0`];
}

export interface PostgresBlobStoreOptions {
  /** Schema of Steward's tables, as for PostgresStore; the URL's `?schema=` names it too. */
  schema?: string;
  /** Connections for transfers (default BLOB_POOL_SIZE). */
  maxConnections?: number;
  /** How long a replaced or deleted blob's bytes stay for readers already streaming them. */
  droppedGraceMs?: number;
}

interface Current {
  id: number;
  bytes: number;
}

export class PostgresBlobStore implements BlobStore {
  readonly schema: string | null;
  readonly droppedGraceMs: number;
  readonly #pool: Pool;
  readonly #appends = new KeyedLock();
  #lastSweep = 0;
  #sweeping: Promise<unknown> | null = null;
  #closed = false;

  constructor(url: string, options: PostgresBlobStoreOptions = {}) {
    const split = splitSchemaParameter(url);
    const schema = options.schema ?? split.schema;
    this.schema = schema;
    this.droppedGraceMs = options.droppedGraceMs ?? DROPPED_GRACE_MS;
    this.#pool = new Pool({
      connectionString: split.url,
      application_name: "steward-blobs",
      types: TYPES,
      max: options.maxConnections ?? BLOB_POOL_SIZE,
      ...blobStoreBounds(),
      onConnect:
        schema === null
          ? undefined
          : async (client) => {
              await client.query(`SET search_path TO ${escapeIdentifier(schema)}`);
            },
    });
    // An idle connection that breaks is dropped by the pool and reported here; without a listener
    // that would end the process. The next transfer opens a new one, or fails loudly.
    this.#pool.on("error", () => {});
  }

  async write(key: string, data: Readable): Promise<BlobInfo> {
    try {
      checkBlobKey(key);
      return await this.#transaction(async (client) => {
        const id = Number((await client.query(SQL.nextId)).rows[0].id);
        const chunks = new Chunker(BLOB_CHUNK_BYTES);
        let bytes = 0;
        const insert = async (chunk: Buffer) => {
          await client.query(query("insertChunk", [id, bytes, chunk]));
          bytes += chunk.byteLength;
        };
        for await (const piece of data) {
          for (const chunk of chunks.push(asBuffer(piece))) await insert(chunk);
        }
        const last = chunks.end();
        if (last) await insert(last);
        // Writers of one key switch one at a time, so each sees the blob the one before made current.
        await client.query(SQL.lockKey, [key]);
        await client.query(SQL.dropKey, [key]);
        await client.query(SQL.insertBlob, [id, key, bytes]);
        return { key, bytes };
      });
    } catch (error) {
      data.destroy(); // the stream is ours once handed over: do not leave its source hanging
      throw error;
    } finally {
      this.#maybeSweep();
    }
  }

  async append(key: string, offset: number, data: Buffer): Promise<number> {
    checkBlobKey(key);
    if (!Number.isSafeInteger(offset) || offset < 0) throw new Error(`bad offset ${offset} for ${key}`);
    return this.#appends.run(key, async () => {
      if (data.byteLength > 0 && data.byteLength <= BLOB_CHUNK_BYTES) {
        const done = await this.#pool.query(query("appendAtEnd", [key, offset, data, data.byteLength]));
        if (done.rowCount === 1) return offset + data.byteLength;
      }
      return this.#transaction((client) => appendChecked(client, key, offset, data));
    });
  }

  read(key: string, offset = 0): Readable {
    checkBlobKey(key);
    if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`bad offset ${offset} for ${key}`);
    // Bytes, not objects: the stream buffers one chunk or so ahead of its reader, not whole batches.
    return Readable.from(this.#stream(key, offset), { objectMode: false });
  }

  async stat(key: string): Promise<BlobInfo | null> {
    checkBlobKey(key);
    const found = await this.#current(key);
    return found ? { key, bytes: found.bytes } : null;
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    const trimmed = trimPrefix(prefix);
    let result: { rows: { key: string; bytes: number }[] };
    if (trimmed === "") {
      result = await this.#pool.query(longBound(query("listAll", [])));
    } else {
      checkBlobKey(trimmed, "blob prefix");
      result = await this.#pool.query(query("list", folderRange(trimmed)));
    }
    return result.rows.map((row) => ({ key: row.key, bytes: row.bytes })).sort(compareKeys);
  }

  async deletePrefix(prefix: string): Promise<void> {
    // An empty prefix would be the whole store: never what a caller means (checkBlobKey refuses it).
    const trimmed = trimPrefix(prefix);
    checkBlobKey(trimmed, "blob prefix");
    await this.#pool.query(longBound(query("dropPrefix", folderRange(trimmed))));
    this.#maybeSweep();
  }

  /** Deletes the blobs dropped longer than the grace ago, with their chunks; returns how many. */
  async sweep(): Promise<number> {
    this.#lastSweep = monotonicMs();
    // Many blobs at once, in the background: the long bound (pg-bounds.ts).
    const result = await this.#pool.query(longBound({ text: SQL.sweep, values: [this.droppedGraceMs] }));
    return result.rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#sweeping;
    await this.#pool.end();
  }

  async #current(key: string, client: Pool | PoolClient = this.#pool): Promise<Current | null> {
    const result = await client.query<Current>(query("current", [key]));
    return result.rows[0] ?? null;
  }

  async *#stream(key: string, offset: number): AsyncGenerator<Buffer> {
    const found = await this.#current(key);
    if (!found) throw new BlobNotFoundError(key);
    // The blob as it was when looked up: bytes appended later are for the next reader.
    const { id, bytes } = found;
    let at = offset;
    while (at < bytes) {
      const end = Math.min(bytes, at + READ_BATCH_BYTES);
      const rows = await fetchChunks(this.#pool, id, at, end);
      if (rows.length === 0 || rows[0].at > at) throw gone(key, at, this.droppedGraceMs);
      for (const row of rows) {
        if (row.at > at) throw gone(key, at, this.droppedGraceMs);
        const piece = row.data.subarray(at - row.at, Math.min(row.data.byteLength, bytes - row.at));
        if (piece.byteLength === 0) continue;
        at += piece.byteLength;
        yield piece;
      }
    }
  }

  #transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.#pool, "BEGIN", work);
  }

  /** Starts a sweep in the background when the last one is SWEEP_EVERY_MS old; its errors wait for the next. */
  #maybeSweep(): void {
    if (this.#closed || this.#sweeping || monotonicMs() - this.#lastSweep < SWEEP_EVERY_MS) return;
    this.#sweeping = this.sweep()
      .catch(() => {})
      .finally(() => {
        this.#sweeping = null;
      });
  }
}

/**
 * An append that may be a resend, the first one, or refused: under the key's lock (serialising it
 * with writes of the key from any broker) and the row's.
 */
async function appendChecked(client: PoolClient, key: string, offset: number, data: Buffer): Promise<number> {
  await client.query(SQL.lockKey, [key]);
  const found = (await client.query<Current>(query("currentForUpdate", [key]))).rows[0];
  let id: number;
  let size: number;
  if (found) {
    ({ id, bytes: size } = found);
  } else {
    if (offset > 0) throw new Error(`append to ${key} at ${offset}, but there is no such blob yet`);
    id = Number((await client.query(SQL.newBlob, [key])).rows[0].id);
    size = 0;
  }
  if (offset > size) throw new Error(`append to ${key} at ${offset}, but the blob has only ${size} bytes`);
  // A resend of bytes already there (the sender did not hear our answer): check they are the same,
  // and write only what lies past the end.
  const overlap = Math.min(size - offset, data.byteLength);
  if (overlap > 0 && !(await bytesAt(client, id, offset, overlap)).equals(data.subarray(0, overlap))) {
    throw new Error(`append to ${key} at ${offset} differs from the bytes already there`);
  }
  const rest = data.subarray(overlap);
  if (rest.byteLength === 0) return size;
  for (let start = 0; start < rest.byteLength; start += BLOB_CHUNK_BYTES) {
    const chunk = rest.subarray(start, start + BLOB_CHUNK_BYTES);
    await client.query(query("insertChunk", [id, size + start, chunk]));
  }
  await client.query(SQL.setBytes, [id, size + rest.byteLength]);
  return size + rest.byteLength;
}

interface ChunkRow {
  at: number;
  data: Buffer;
}

async function fetchChunks(
  client: Pool | PoolClient,
  id: number,
  from: number,
  to: number,
): Promise<ChunkRow[]> {
  return (await client.query<ChunkRow>(query("chunks", [id, from, to]))).rows;
}

/** `length` bytes of blob `id` from `offset` (the caller knows they are there). */
async function bytesAt(client: PoolClient, id: number, offset: number, length: number): Promise<Buffer> {
  const rows = await fetchChunks(client, id, offset, offset + length);
  const whole = Buffer.concat(rows.map((row) => row.data));
  const start = offset - (rows[0]?.at ?? offset);
  return whole.subarray(start, start + length);
}

function gone(key: string, at: number, graceMs: number): Error {
  return new Error(
    `blob ${key} was replaced or deleted more than ${graceMs / 1000} s ago while being read (at byte ${at})`,
  );
}

function asBuffer(piece: unknown): Buffer {
  if (typeof piece === "string") return Buffer.from(piece);
  if (Buffer.isBuffer(piece)) return piece;
  if (piece instanceof Uint8Array) return Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
  throw new TypeError(`a blob stream gave ${typeof piece}, not bytes`);
}

/** Cuts a stream of pieces of any size into chunks of exactly `size` bytes, the last one shorter. */
export class Chunker {
  readonly #size: number;
  #parts: Buffer[] = [];
  #buffered = 0;

  constructor(size: number) {
    this.#size = size;
  }

  /** The chunks completed by `piece`; at most `size` bytes stay buffered. */
  push(piece: Buffer): Buffer[] {
    if (piece.byteLength === 0) return [];
    this.#parts.push(piece);
    this.#buffered += piece.byteLength;
    if (this.#buffered < this.#size) return [];
    const whole = Buffer.concat(this.#parts, this.#buffered);
    const full = whole.byteLength - (whole.byteLength % this.#size);
    const chunks: Buffer[] = [];
    for (let start = 0; start < full; start += this.#size)
      chunks.push(whole.subarray(start, start + this.#size));
    // Copied, so that the rest does not keep a large piece alive.
    const rest = Buffer.from(whole.subarray(full));
    this.#parts = rest.byteLength > 0 ? [rest] : [];
    this.#buffered = rest.byteLength;
    return chunks;
  }

  /** What is left: the last, shorter chunk, or null. */
  end(): Buffer | null {
    if (this.#buffered === 0) return null;
    const last = Buffer.concat(this.#parts, this.#buffered);
    this.#parts = [];
    this.#buffered = 0;
    return last;
  }
}
