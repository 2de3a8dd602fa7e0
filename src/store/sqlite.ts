// The embedded store: SQLite through node:sqlite (synchronous, built into Node 24, no native build).
// WAL with synchronous=FULL, so a commit that returned survives kill -9 and power loss (guarantee 1).
// The calls are synchronous; the Store interface is asynchronous only so that PostgreSQL fits it too.

import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { EventRecord, TaskRecord } from "../model/records.ts";
import {
  attemptRow,
  eventRow,
  hostRow,
  jobRow,
  type Row,
  type RowCodec,
  rowToAttempt,
  rowToEvent,
  rowToHost,
  rowToJob,
  rowToTask,
  taskRow,
} from "./rows.ts";
import type { Change, Store, StoreSnapshot } from "./store.ts";

/** What SQLite binds: booleans go in as 0/1 (see CODEC). */
type SqlValue = string | number | null;

const MIGRATIONS_DIR = join(import.meta.dirname, "migrations", "sqlite");
const BUSY_TIMEOUT_MS = 10_000;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The numbered files of a migrations folder ("001_init.sql"), in order; gaps and duplicates are errors. */
export async function readMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for (const file of await readdir(dir)) {
    const match = /^(\d+)_[\w-]+\.sql$/.exec(file);
    if (!match) continue;
    migrations.push({ version: Number(match[1]), name: file, sql: await readFile(join(dir, file), "utf8") });
  }
  migrations.sort((a, b) => a.version - b.version);
  migrations.forEach((migration, i) => {
    if (migration.version !== i + 1) {
      throw new Error(`migrations in ${dir}: expected version ${i + 1}, found ${migration.name}`);
    }
  });
  return migrations;
}

const JOB_COLUMNS =
  "id, name, owner, state, priority, held, cancel_requested, created_at, ended_at, spec, inputs";
const TASK_COLUMNS = "job_id, idx, state, attempts, failures, losses, not_before, result_attempt, checkpoint";
const ATTEMPT_COLUMNS =
  "job_id, task_index, number, host, state, outcome, reason, exit_code, restarted, started_at, ended_at";
const HOST_COLUMNS = "name, pool, state, slots, labels, facts, last_seen";

// putTasks binds this many rows per statement: half the time of one row per statement at 100,000
// tasks, and 900 parameters stay under every SQLite's limit (999 before 3.32).
const TASKS_PER_STATEMENT = 100;
const TASK_PARAMETERS = TASK_COLUMNS.split(", ").length;

/** INSERT ... ON CONFLICT DO UPDATE of every column that is not part of the key, for `rows` rows. */
function upsert(table: string, columns: string, key: string[], rows = 1): string {
  const names = columns.split(", ");
  const row = `(${names.map(() => "?").join(", ")})`;
  const placeholders = Array.from({ length: rows }, () => row).join(", ");
  const updates = names
    .filter((name) => !key.includes(name))
    .map((name) => `${name} = excluded.${name}`)
    .join(", ");
  return `INSERT INTO ${table} (${columns}) VALUES ${placeholders} ON CONFLICT (${key.join(", ")}) DO UPDATE SET ${updates}`;
}

const SQL = {
  putJob: upsert("jobs", JOB_COLUMNS, ["id"]),
  putTask: upsert("tasks", TASK_COLUMNS, ["job_id", "idx"]),
  putTaskChunk: upsert("tasks", TASK_COLUMNS, ["job_id", "idx"], TASKS_PER_STATEMENT),
  putAttempt: upsert("attempts", ATTEMPT_COLUMNS, ["job_id", "task_index", "number"]),
  putHost: upsert("hosts", HOST_COLUMNS, ["name"]),
  addEvent: "INSERT INTO events (job_id, at, kind, message) VALUES (?, ?, ?, ?)",
  deleteHost: "DELETE FROM hosts WHERE name = ?",
  deleteJobAttempts: "DELETE FROM attempts WHERE job_id = ?",
  deleteJobTasks: "DELETE FROM tasks WHERE job_id = ?",
  deleteJobEvents: "DELETE FROM events WHERE job_id = ?",
  deleteJob: "DELETE FROM jobs WHERE id = ?",
  setMeta:
    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
  loadJobs: `SELECT ${JOB_COLUMNS} FROM jobs ORDER BY created_at, id`,
  loadTasks: `SELECT ${TASK_COLUMNS} FROM tasks ORDER BY job_id, idx`,
  loadAttempts: `SELECT ${ATTEMPT_COLUMNS} FROM attempts ORDER BY job_id, task_index, number`,
  loadHosts: `SELECT ${HOST_COLUMNS} FROM hosts ORDER BY name`,
  loadMeta: "SELECT key, value FROM meta ORDER BY key",
  events: "SELECT job_id, at, kind, message FROM events WHERE job_id = ? ORDER BY at, id",
} as const;

type StatementName = keyof typeof SQL;

// Rows come back as arrays (setReturnArrays) in the column order above: cheaper than objects at 100,000 rows.

/** SQLite keeps booleans as 0/1 and JSON as text. */
const CODEC: RowCodec = {
  bool(value) {
    if (typeof value !== "boolean") throw new TypeError(`expected a boolean, got ${typeof value}`);
    return value ? 1 : 0;
  },
  readBool: (value) => value === 1,
  readJson: (value) => JSON.parse(value as string),
};

export class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  readonly path: string;
  #db: DatabaseSync | null = null;
  #statements = new Map<StatementName, StatementSync>();

  constructor(path: string) {
    this.path = path;
  }

  async open(): Promise<void> {
    if (this.#db) return;
    const db = new DatabaseSync(this.path, { timeout: BUSY_TIMEOUT_MS });
    try {
      db.exec("PRAGMA journal_mode = WAL");
      db.exec("PRAGMA synchronous = FULL");
      db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
      migrate(db, await readMigrations());
    } catch (error) {
      db.close();
      throw error;
    }
    this.#db = db;
  }

  async load(): Promise<StoreSnapshot> {
    this.#database();
    return {
      jobs: this.#rows("loadJobs").map((row) => rowToJob(row, CODEC)),
      tasks: this.#rows("loadTasks").map((row) => rowToTask(row, CODEC)),
      attempts: this.#rows("loadAttempts").map((row) => rowToAttempt(row, CODEC)),
      hosts: this.#rows("loadHosts").map((row) => rowToHost(row, CODEC)),
      meta: Object.fromEntries(this.#rows("loadMeta").map((row) => [row[0] as string, row[1] as string])),
    };
  }

  async commit(changes: readonly Change[]): Promise<void> {
    const db = this.#database();
    if (changes.length === 0) return;
    db.exec("BEGIN IMMEDIATE");
    try {
      for (const change of changes) this.#apply(change);
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw error;
    }
  }

  async events(jobId: string): Promise<EventRecord[]> {
    this.#database();
    return this.#rows("events", jobId).map(rowToEvent);
  }

  async close(): Promise<void> {
    const db = this.#db;
    if (!db) return;
    this.#db = null;
    this.#statements.clear();
    db.close();
  }

  #apply(change: Change): void {
    switch (change.op) {
      case "putJob":
        this.#run("putJob", ...(jobRow(change.job, CODEC) as SqlValue[]));
        return;
      case "putTasks":
        this.#putTasks(change.tasks);
        return;
      case "putAttempt":
        this.#run("putAttempt", ...(attemptRow(change.attempt, CODEC) as SqlValue[]));
        return;
      case "addEvent":
        this.#run("addEvent", ...(eventRow(change.event) as SqlValue[]));
        return;
      case "putHost":
        this.#run("putHost", ...(hostRow(change.host) as SqlValue[]));
        return;
      case "deleteHost":
        this.#run("deleteHost", change.name);
        return;
      case "deleteJob":
        this.#run("deleteJobAttempts", change.jobId);
        this.#run("deleteJobTasks", change.jobId);
        this.#run("deleteJobEvents", change.jobId);
        this.#run("deleteJob", change.jobId);
        return;
      case "setMeta":
        this.#run("setMeta", change.key, change.value);
        return;
      default: {
        const unknown: never = change;
        throw new Error(`unknown change: ${JSON.stringify(unknown)}`);
      }
    }
  }

  #putTasks(tasks: readonly TaskRecord[]): void {
    // Rows of one statement are applied in order, so a task named twice still ends as its last put.
    const values: SqlValue[] = new Array(TASKS_PER_STATEMENT * TASK_PARAMETERS);
    const chunk = this.#statement("putTaskChunk");
    let start = 0;
    for (; start + TASKS_PER_STATEMENT <= tasks.length; start += TASKS_PER_STATEMENT) {
      for (let i = 0; i < TASKS_PER_STATEMENT; i++) {
        const row = taskRow(tasks[start + i]) as SqlValue[];
        for (let column = 0; column < TASK_PARAMETERS; column++)
          values[i * TASK_PARAMETERS + column] = row[column];
      }
      chunk.run(...values);
    }
    const one = this.#statement("putTask");
    for (; start < tasks.length; start++) one.run(...(taskRow(tasks[start]) as SqlValue[]));
  }

  #database(): DatabaseSync {
    if (!this.#db) throw new Error(`SQLite store ${this.path} is not open`);
    return this.#db;
  }

  #statement(name: StatementName): StatementSync {
    let statement = this.#statements.get(name);
    if (!statement) {
      statement = this.#database().prepare(SQL[name]);
      statement.setReturnArrays(true);
      this.#statements.set(name, statement);
    }
    return statement;
  }

  #run(name: StatementName, ...values: SqlValue[]): void {
    this.#statement(name).run(...values);
  }

  #rows(name: StatementName, ...values: SqlValue[]): Row[] {
    return this.#statement(name).all(...values) as unknown as Row[];
  }
}

/** Applies the migrations not yet recorded in schema_migrations, each in its own transaction. */
function migrate(db: DatabaseSync, migrations: Migration[]): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  )`);
  const applied = () =>
    new Set(
      db
        .prepare("SELECT version FROM schema_migrations")
        .all()
        .map((row) => Number(row.version)),
    );
  const newest = Math.max(0, ...applied());
  if (newest > migrations.length) {
    throw new Error(
      `the database is at schema version ${newest}, newer than this Steward knows (${migrations.length})`,
    );
  }
  for (const migration of migrations) {
    if (applied().has(migration.version)) continue;
    // IMMEDIATE takes the write lock first, so two processes opening one file do not both migrate.
    db.exec("BEGIN IMMEDIATE");
    try {
      if (!applied().has(migration.version)) {
        db.exec(migration.sql);
        db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
          migration.version,
          migration.name,
          Date.now(),
        );
      }
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw new Error(`schema migration ${migration.name} failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}
