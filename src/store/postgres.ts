// The high-availability store: PostgreSQL through pg. The same tables and the same rules as the
// SQLite store (src/store/sqlite.ts); both pass test/conformance/store.test.ts.
//
// A commit is one transaction. Within it, the puts between two deletes are gathered per table and
// written as one statement per table (UNNEST of column arrays): puts to different tables commute,
// and puts to one table are upserts where the last one wins, so the result is the batch applied in
// order, in a handful of round trips instead of one per change.

import { join } from "node:path";
import { escapeIdentifier, Pool, type PoolClient, type QueryArrayConfig, TypeOverrides, types } from "pg";
import type { AttemptRecord, EventRecord, HostRecord, JobRecord, TaskRecord } from "../model/records.ts";
import {
  attemptRow,
  eventRow,
  hostRow,
  jobRow,
  type RowCodec,
  type RowValue,
  rowToAttempt,
  rowToEvent,
  rowToHost,
  rowToJob,
  rowToTask,
  taskRow,
} from "./rows.ts";
import { type Migration, readMigrations } from "./sqlite.ts";
import type { Change, Store, StoreSnapshot } from "./store.ts";

export const POSTGRES_MIGRATIONS_DIR = join(import.meta.dirname, "migrations", "postgres");

/** Two-key advisory lock: this class ("Stew") and a hash of the schema, so one migrator per schema. */
const MIGRATION_LOCK_CLASS = 0x53746577;

/** Rows per UNNEST statement: bounds the size of one message; 100,000 tasks are still 10 round trips. */
const ROWS_PER_STATEMENT = 10_000;

/** PostgreSQL truncates longer identifiers, which would silently name another schema. */
const MAX_IDENTIFIER_BYTES = 63;

// bigint columns (times, priority) come back as strings by default; they hold JavaScript numbers.
const TYPES = new TypeOverrides();
TYPES.setTypeParser(types.builtins.INT8, Number);

type Row = unknown[];
type Value = RowValue;

interface Column {
  name: string;
  type: "text" | "integer" | "bigint" | "boolean" | "json";
}

function columns(spec: string): Column[] {
  return spec.split(", ").map((each) => {
    const [name, type] = each.split(" ");
    return { name, type: type as Column["type"] };
  });
}

const JOB = columns(
  "id text, name text, owner text, state text, priority bigint, held boolean, cancel_requested boolean, " +
    "created_at bigint, ended_at bigint, spec json, inputs json",
);
const TASK = columns(
  "job_id text, idx integer, state text, attempts integer, failures integer, losses integer, " +
    "not_before bigint, result_attempt integer, checkpoint json",
);
const ATTEMPT = columns(
  "job_id text, task_index integer, number integer, host text, state text, outcome text, reason text, " +
    "exit_code integer, restarted boolean, started_at bigint, ended_at bigint",
);
const EVENT = columns("job_id text, at bigint, kind text, message text");
const HOST = columns(
  "name text, pool text, state text, slots integer, labels json, facts json, last_seen bigint",
);
const META = columns("key text, value text");

const names = (table: Column[]) => table.map((column) => column.name).join(", ");

/** INSERT of one row per element of the column arrays $1..$n, in array order. */
function insertUnnest(table: string, cols: Column[]): string {
  const arrays = cols.map((column, i) => `$${i + 1}::${column.type}[]`).join(", ");
  return `INSERT INTO ${table} (${names(cols)}) SELECT * FROM unnest(${arrays})`;
}

/** insertUnnest that replaces the rows already there; the arrays must not name one key twice. */
function upsertUnnest(table: string, cols: Column[], key: string[]): string {
  const updates = cols
    .filter((column) => !key.includes(column.name))
    .map((column) => `${column.name} = excluded.${column.name}`)
    .join(", ");
  return `${insertUnnest(table, cols)} ON CONFLICT (${key.join(", ")}) DO UPDATE SET ${updates}`;
}

const SQL = {
  putJobs: upsertUnnest("jobs", JOB, ["id"]),
  putTasks: upsertUnnest("tasks", TASK, ["job_id", "idx"]),
  putAttempts: upsertUnnest("attempts", ATTEMPT, ["job_id", "task_index", "number"]),
  addEvents: insertUnnest("events", EVENT),
  putHosts: upsertUnnest("hosts", HOST, ["name"]),
  setMeta: upsertUnnest("meta", META, ["key"]),
  deleteHost: "DELETE FROM hosts WHERE name = $1",
  // Data-modifying WITH clauses run whether or not they are referenced: one round trip for all four.
  deleteJob:
    "WITH a AS (DELETE FROM attempts WHERE job_id = $1), t AS (DELETE FROM tasks WHERE job_id = $1), " +
    "e AS (DELETE FROM events WHERE job_id = $1) DELETE FROM jobs WHERE id = $1",
  loadJobs: `SELECT ${names(JOB)} FROM jobs ORDER BY created_at, id`,
  loadTasks: `SELECT ${names(TASK)} FROM tasks ORDER BY job_id, idx`,
  loadAttempts: `SELECT ${names(ATTEMPT)} FROM attempts ORDER BY job_id, task_index, number`,
  loadHosts: `SELECT ${names(HOST)} FROM hosts ORDER BY name`,
  loadMeta: "SELECT key, value FROM meta ORDER BY key",
  events: `SELECT ${names(EVENT)} FROM events WHERE job_id = $1 ORDER BY at, id`,
} as const;

type StatementName = keyof typeof SQL;

export interface PostgresStoreOptions {
  /** Schema for Steward's tables, created if missing; the URL's `?schema=` names it too. */
  schema?: string;
}

/**
 * Takes Steward's own `schema` parameter out of a postgres:// URL (pg would ignore it), so that one
 * `--store` URL can say where the tables live.
 */
export function splitSchemaParameter(url: string): { url: string; schema: string | null } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, schema: null };
  }
  const schema = parsed.searchParams.get("schema");
  if (schema === null) return { url, schema: null };
  parsed.searchParams.delete("schema");
  return { url: parsed.toString(), schema };
}

export class PostgresStore implements Store {
  readonly kind = "postgres" as const;
  /** The schema given (option or URL), or null for the connection's own search_path. */
  readonly schema: string | null;
  readonly #url: string;
  #pool: Pool | null = null;
  #opening: Promise<void> | null = null;

  constructor(url: string, options: PostgresStoreOptions = {}) {
    const split = splitSchemaParameter(url);
    this.#url = split.url;
    const schema = options.schema ?? split.schema;
    if (schema !== null && (schema === "" || Buffer.byteLength(schema) > MAX_IDENTIFIER_BYTES)) {
      throw new Error(`PostgreSQL schema name must have 1 to ${MAX_IDENTIFIER_BYTES} bytes: "${schema}"`);
    }
    this.schema = schema;
  }

  open(): Promise<void> {
    if (this.#pool) return Promise.resolve();
    this.#opening ??= this.#open().finally(() => {
      this.#opening = null;
    });
    return this.#opening;
  }

  async #open(): Promise<void> {
    const schema = this.schema;
    const pool = new Pool({
      connectionString: this.#url,
      application_name: "steward",
      types: TYPES,
      // The pool awaits this before handing the connection out, and drops the connection if it fails.
      onConnect: schema === null ? undefined : (client) => setSearchPath(client, schema),
    });
    // A pooled connection that breaks while idle is dropped by the pool and reported here; without a
    // listener that would end the process. The next commit opens a new one, or fails loudly.
    pool.on("error", () => {});
    try {
      await migrate(pool, schema, await readMigrations(POSTGRES_MIGRATIONS_DIR));
    } catch (error) {
      await pool.end();
      throw new Error(`cannot open the PostgreSQL store ${this.#where()}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    this.#pool = pool;
  }

  async load(): Promise<StoreSnapshot> {
    // One REPEATABLE READ transaction: the five reads see one state even while others commit.
    return this.#transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => ({
      jobs: (await rows(client, "loadJobs")).map((row) => rowToJob(row, CODEC)),
      tasks: (await rows(client, "loadTasks")).map((row) => rowToTask(row, CODEC)),
      attempts: (await rows(client, "loadAttempts")).map((row) => rowToAttempt(row, CODEC)),
      hosts: (await rows(client, "loadHosts")).map((row) => rowToHost(row, CODEC)),
      meta: Object.fromEntries((await rows(client, "loadMeta")).map((row) => [row[0], row[1]])),
    }));
  }

  async commit(changes: readonly Change[]): Promise<void> {
    this.#connected();
    if (changes.length === 0) return;
    await this.#transaction("BEGIN", async (client) => {
      const batch = new PendingPuts();
      for (const change of changes) {
        switch (change.op) {
          case "deleteJob":
            await batch.flush(client);
            await run(client, "deleteJob", [change.jobId]);
            break;
          case "deleteHost":
            await batch.flush(client);
            await run(client, "deleteHost", [change.name]);
            break;
          default:
            batch.add(change);
        }
      }
      await batch.flush(client);
    });
  }

  async events(jobId: string): Promise<EventRecord[]> {
    const result = await this.#connected().query(query("events", [jobId]));
    return result.rows.map(rowToEvent);
  }

  async close(): Promise<void> {
    await this.#opening?.catch(() => {});
    const pool = this.#pool;
    if (!pool) return;
    this.#pool = null;
    await pool.end();
  }

  #connected(): Pool {
    if (!this.#pool) throw new Error(`the PostgreSQL store ${this.#where()} is not open`);
    return this.#pool;
  }

  /** Host, port, database and schema, for messages: never the password. */
  #where(): string {
    let place = "(unparsed URL)";
    try {
      const url = new URL(this.#url);
      place = `${url.host || "localhost"}${url.pathname}`;
    } catch {}
    return this.schema === null ? place : `${place} schema ${this.schema}`;
  }

  /** Runs `work` between `begin` and COMMIT on one connection; ROLLBACK and rethrow on error. */
  async #transaction<T>(begin: string, work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#connected().connect();
    // A connection whose ROLLBACK failed is in an unknown state: it is destroyed, not pooled again.
    let broken: Error | undefined;
    try {
      await client.query(begin);
      try {
        const result = await work(client);
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch((rollbackError: Error) => {
          broken = rollbackError;
        });
        throw error;
      }
    } finally {
      client.release(broken);
    }
  }
}

async function setSearchPath(
  client: { query(text: string): Promise<unknown> },
  schema: string,
): Promise<void> {
  await client.query(`SET search_path TO ${escapeIdentifier(schema)}`);
}

function query(name: StatementName, values: unknown[]): QueryArrayConfig {
  // Named: each pooled connection parses and plans a statement once.
  return { name: `steward_${name}`, text: SQL[name], values, rowMode: "array" };
}

async function run(client: PoolClient, name: StatementName, values: unknown[]): Promise<void> {
  await client.query(query(name, values));
}

async function rows(client: PoolClient, name: StatementName): Promise<Row[]> {
  return (await client.query(query(name, []))).rows;
}

/**
 * The puts of a batch since its last delete, per table. Rows that name a key already seen go into
 * a later round, because one INSERT ... ON CONFLICT may not touch a row twice: round n holds the
 * n-th put of each key, so the rounds, applied in order, leave the last put of every key, and
 * every put is still checked by the schema as it would be one by one.
 */
class PendingPuts {
  jobs = new Rounds<JobRecord>((job) => job.id);
  tasks = new Rounds<TaskRecord>((task) => `${task.jobId}\0${task.index}`);
  attempts = new Rounds<AttemptRecord>((a) => `${a.jobId}\0${a.taskIndex}\0${a.number}`);
  hosts = new Rounds<HostRecord>((host) => host.name);
  meta = new Rounds<{ key: string; value: string }>((entry) => entry.key);
  /** Inserted in the order they were added: their ids keep that order for events(jobId). */
  events: EventRecord[] = [];

  add(change: Exclude<Change, { op: "deleteJob" | "deleteHost" }>): void {
    switch (change.op) {
      case "putJob":
        this.jobs.add(change.job);
        return;
      case "putTasks":
        for (const task of change.tasks) this.tasks.add(task);
        return;
      case "putAttempt":
        this.attempts.add(change.attempt);
        return;
      case "addEvent":
        this.events.push(change.event);
        return;
      case "putHost":
        this.hosts.add(change.host);
        return;
      case "setMeta":
        this.meta.add({ key: change.key, value: change.value });
        return;
      default: {
        const unknown: never = change;
        throw new Error(`unknown change: ${JSON.stringify(unknown)}`);
      }
    }
  }

  async flush(client: PoolClient): Promise<void> {
    await write(client, "putJobs", this.jobs.take(), JOB.length, (job) => jobRow(job, CODEC));
    await write(client, "putTasks", this.tasks.take(), TASK.length, taskRow);
    await write(client, "putAttempts", this.attempts.take(), ATTEMPT.length, (attempt) =>
      attemptRow(attempt, CODEC),
    );
    await write(client, "addEvents", [this.events], EVENT.length, eventRow);
    this.events = [];
    await write(client, "putHosts", this.hosts.take(), HOST.length, hostRow);
    await write(client, "setMeta", this.meta.take(), META.length, (entry) => [entry.key, entry.value]);
  }
}

class Rounds<T> {
  readonly #key: (record: T) => string;
  #seen = new Map<string, number>();
  #rounds: T[][] = [];

  constructor(key: (record: T) => string) {
    this.#key = key;
  }

  add(record: T): void {
    const key = this.#key(record);
    const round = this.#seen.get(key) ?? 0;
    this.#seen.set(key, round + 1);
    this.#rounds[round] ??= [];
    this.#rounds[round].push(record);
  }

  take(): T[][] {
    const rounds = this.#rounds;
    this.#seen = new Map();
    this.#rounds = [];
    return rounds;
  }
}

/** Each round as column arrays, ROWS_PER_STATEMENT rows per statement, in order. */
async function write<T>(
  client: PoolClient,
  name: StatementName,
  rounds: T[][],
  width: number,
  values: (record: T) => Value[],
): Promise<void> {
  for (const round of rounds) {
    for (let start = 0; start < round.length; start += ROWS_PER_STATEMENT) {
      const chunk = round.slice(start, start + ROWS_PER_STATEMENT);
      const arrays: Value[][] = Array.from({ length: width }, () => new Array(chunk.length));
      chunk.forEach((record, row) => {
        const each = values(record);
        for (let column = 0; column < width; column++) arrays[column][row] = each[column];
      });
      await run(client, name, arrays);
    }
  }
}

/** PostgreSQL keeps booleans as booleans; json columns come back parsed. */
const CODEC: RowCodec = {
  bool(value) {
    // PostgreSQL would read 1 or "yes" as true; SQLite refuses them too.
    if (typeof value !== "boolean") throw new TypeError(`expected a boolean, got ${typeof value}`);
    return value;
  },
  readBool: (value) => value as boolean,
  readJson: (value) => value,
};

/**
 * Applies the migrations not yet recorded in schema_migrations, all in one transaction under an
 * advisory lock: a second server starting at the same moment waits, then finds them applied.
 */
async function migrate(pool: Pool, schema: string | null, migrations: Migration[]): Promise<void> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    try {
      await client.query(
        "SELECT pg_advisory_xact_lock($1, hashtext(coalesce($2::text, current_schema()::text, '')))",
        [MIGRATION_LOCK_CLASS, schema],
      );
      // Looked up rather than CREATE SCHEMA IF NOT EXISTS, which needs the CREATE privilege even when
      // the schema is there: a schema made beforehand by an administrator is enough.
      if (schema !== null) {
        const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
        if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${escapeIdentifier(schema)}`);
      }
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at bigint NOT NULL
      )`);
      const applied = new Set(
        (await client.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map((row) =>
          Number(row.version),
        ),
      );
      const newest = Math.max(0, ...applied);
      if (newest > migrations.length) {
        throw new Error(
          `the database is at schema version ${newest}, newer than this Steward knows (${migrations.length})`,
        );
      }
      for (const migration of migrations) {
        if (applied.has(migration.version)) continue;
        try {
          await client.query(migration.sql);
        } catch (error) {
          throw new Error(`schema migration ${migration.name} failed: ${(error as Error).message}`, {
            cause: error,
          });
        }
        await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
          migration.version,
          migration.name,
          Date.now(),
        ]);
      }
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    }
  } finally {
    client.release(broken);
  }
}
