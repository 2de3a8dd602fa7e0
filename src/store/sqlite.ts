// The embedded store: SQLite through node:sqlite (synchronous, built into Node 24, no native build).
// WAL with synchronous=FULL, so a commit that returned survives kill -9 and power loss (guarantee 1).
// The calls are synchronous; the Store interface is asynchronous only so that PostgreSQL fits it too.

import { join } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { EventRecord, TaskRecord } from "../model/records.ts";
import { MIGRATIONS_DIR, type MigrationDialect, migrate, readMigrations } from "./migrate.ts";
import { decodeHeader, decodeUsage, recoverySql } from "./recovery-sql.ts";
import {
  ATTEMPTS,
  columnNames,
  type Dialect,
  EVENTS,
  HOSTS,
  JOBS,
  META,
  type RowCodec,
  rowCodec,
  selectColumns,
  TASKS,
  type Table,
  TOKENS,
} from "./schema.ts";
import { type Change, StaleTermError, type Store, type StoredJob, type StoreSnapshot } from "./store.ts";

/** What SQLite binds: booleans go in as 0/1 (see DIALECT). */
type SqlValue = string | number | null;
type Row = readonly unknown[];

export const SQLITE_MIGRATIONS_DIR = join(MIGRATIONS_DIR, "sqlite");
const BUSY_TIMEOUT_MS = 10_000;

/** SQLite keeps booleans as 0/1 and JSON as text. */
const DIALECT: Dialect = {
  bool: (value) => (value ? 1 : 0),
  readBool: (value) => value === 1,
  readJson: (value) => JSON.parse(value as string),
};

const CODEC = {
  jobs: rowCodec(JOBS, DIALECT),
  tasks: rowCodec(TASKS, DIALECT),
  attempts: rowCodec(ATTEMPTS, DIALECT),
  events: rowCodec(EVENTS, DIALECT),
  hosts: rowCodec(HOSTS, DIALECT),
  tokens: rowCodec(TOKENS, DIALECT),
  meta: rowCodec(META, DIALECT),
};

// putTasks binds this many rows per statement: half the time of one row per statement at 100,000
// tasks, and 1,100 parameters stay under SQLite's limit (32,766 since 3.32).
const TASKS_PER_STATEMENT = 100;
const TASK_PARAMETERS = TASKS.columns.length;

/** INSERT ... ON CONFLICT DO UPDATE of every column that is not part of the key, for `rows` rows. */
function upsert<R>(table: Table<R>, rows = 1): string {
  const row = `(${table.columns.map(() => "?").join(", ")})`;
  const placeholders = Array.from({ length: rows }, () => row).join(", ");
  const updates = table.columns
    .filter((column) => !table.key.includes(column.name))
    .map((column) => `${column.name} = excluded.${column.name}`)
    .join(", ");
  return `INSERT INTO ${table.name} (${columnNames(table.columns)}) VALUES ${placeholders} ON CONFLICT (${table.key.join(", ")}) DO UPDATE SET ${updates}`;
}

function selectAll<R>(table: Table<R>): string {
  return `SELECT ${columnNames(selectColumns(table))} FROM ${table.name} ORDER BY ${table.loadOrder}`;
}

const EVENT_SELECT = `SELECT ${columnNames(selectColumns(EVENTS))} FROM events`;

const RECOVERY = recoverySql({
  countIf: (condition) => `sum(${condition})`,
  specCpus: "coalesce(json_extract(j.spec, '$.resources.cpus'), 1)",
  placementHosts: "max(1, coalesce(json_array_length(a.placement), 1))",
  param: () => "?",
});

const SQL = {
  ...RECOVERY,
  putJob: upsert(JOBS),
  putTask: upsert(TASKS),
  putTaskChunk: upsert(TASKS, TASKS_PER_STATEMENT),
  putAttempt: upsert(ATTEMPTS),
  putHost: upsert(HOSTS),
  putToken: upsert(TOKENS),
  setMeta: upsert(META),
  addEvent: `INSERT INTO events (${columnNames(EVENTS.columns)}) VALUES (${EVENTS.columns.map(() => "?").join(", ")}) RETURNING id`,
  deleteHost: "DELETE FROM hosts WHERE name = ?",
  deleteJobAttempts: "DELETE FROM attempts WHERE job_id = ?",
  deleteJobTasks: "DELETE FROM tasks WHERE job_id = ?",
  deleteJobEvents: "DELETE FROM events WHERE job_id = ?",
  deleteJob: "DELETE FROM jobs WHERE id = ?",
  loadJobs: selectAll(JOBS),
  loadTasks: selectAll(TASKS),
  loadAttempts: selectAll(ATTEMPTS),
  loadHosts: selectAll(HOSTS),
  loadTokens: selectAll(TOKENS),
  loadMeta: selectAll(META),
  events: `${EVENT_SELECT} WHERE job_id = ? ORDER BY at, id`,
  eventsAfter: `${EVENT_SELECT} WHERE id > ? ORDER BY id LIMIT ?`,
  jobEventsAfter: `${EVENT_SELECT} WHERE job_id = ? AND id > ? ORDER BY id LIMIT ?`,
  readTerm: "SELECT term FROM leadership WHERE id = 1",
  writeTerm: "UPDATE leadership SET term = ? WHERE id = 1",
  readSequence: "SELECT next FROM sequences WHERE name = ?",
  writeSequence:
    "INSERT INTO sequences (name, next) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET next = excluded.next",
} as const;

type StatementName = keyof typeof SQL;

// Rows come back as arrays (setReturnArrays) in the column order above: cheaper than objects at 100,000 rows.

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
      await migrate(migrationDialect(db), await readMigrations(SQLITE_MIGRATIONS_DIR));
    } catch (error) {
      db.close();
      throw error;
    }
    this.#db = db;
  }

  async load(): Promise<StoreSnapshot> {
    const db = this.#database();
    // One read transaction: the five reads see one state even while another connection commits.
    db.exec("BEGIN");
    try {
      return {
        jobs: this.#decoded("loadJobs", CODEC.jobs),
        tasks: this.#decoded("loadTasks", CODEC.tasks),
        attempts: this.#decoded("loadAttempts", CODEC.attempts),
        hosts: this.#decoded("loadHosts", CODEC.hosts),
        tokens: this.#decoded("loadTokens", CODEC.tokens),
        meta: Object.fromEntries(this.#rows("loadMeta").map((row) => [row[0] as string, row[1] as string])),
      };
    } finally {
      db.exec("COMMIT");
    }
  }

  async loadLive(): Promise<StoreSnapshot> {
    const db = this.#database();
    db.exec("BEGIN");
    try {
      return {
        jobs: this.#decoded("liveJobs", CODEC.jobs),
        tasks: this.#decoded("liveTasks", CODEC.tasks),
        attempts: this.#decoded("liveAttempts", CODEC.attempts),
        ended: this.#rows("endedHeaders").map(decodeHeader),
        usage: this.#rows("usage").map(decodeUsage),
        hosts: this.#decoded("loadHosts", CODEC.hosts),
        tokens: this.#decoded("loadTokens", CODEC.tokens),
        meta: Object.fromEntries(this.#rows("loadMeta").map((row) => [row[0] as string, row[1] as string])),
      };
    } finally {
      db.exec("COMMIT");
    }
  }

  async loadJob(id: string): Promise<StoredJob | null> {
    const db = this.#database();
    db.exec("BEGIN");
    try {
      const row = this.#rows("job", id)[0];
      if (!row) return null;
      return {
        job: CODEC.jobs.decode(row),
        tasks: this.#rows("jobTasks", id).map(CODEC.tasks.decode),
        attempts: this.#rows("jobAttempts", id).map(CODEC.attempts.decode),
      };
    } finally {
      db.exec("COMMIT");
    }
  }

  async findSubmission(owner: string, submitKey: string): Promise<string | null> {
    this.#database();
    const row = this.#rows("submission", owner, submitKey)[0];
    return row ? (row[0] as string) : null;
  }

  async beginTerm(): Promise<number> {
    return this.#write(() => {
      const term = this.#term() + 1;
      this.#run("writeTerm", term);
      return term;
    });
  }

  async currentTerm(): Promise<number> {
    this.#database();
    return this.#term();
  }

  async commit(term: number, changes: readonly Change[]): Promise<void> {
    const added: [EventRecord, number][] = [];
    this.#write(() => {
      this.#checkTerm(term);
      for (const change of changes) this.#apply(change, added);
    });
    // Only a committed event gets its id.
    for (const [event, id] of added) event.id = id;
  }

  async reserveIds(term: number, sequence: string, count: number): Promise<number> {
    if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`cannot reserve ${count} ids`);
    return this.#write(() => {
      this.#checkTerm(term);
      const row = this.#statement("readSequence").get(sequence) as unknown as Row | undefined;
      const first = row ? Number(row[0]) : 1;
      this.#run("writeSequence", sequence, first + count);
      return first;
    });
  }

  async events(jobId: string): Promise<EventRecord[]> {
    this.#database();
    return this.#rows("events", jobId).map(CODEC.events.decode);
  }

  async eventsAfter(after: number, limit: number, jobId?: string): Promise<EventRecord[]> {
    this.#database();
    const rows =
      jobId === undefined
        ? this.#rows("eventsAfter", after, limit)
        : this.#rows("jobEventsAfter", jobId, after, limit);
    return rows.map(CODEC.events.decode);
  }

  async close(): Promise<void> {
    const db = this.#db;
    if (!db) return;
    this.#db = null;
    this.#statements.clear();
    db.close();
  }

  /** Runs `work` in one write transaction (BEGIN IMMEDIATE takes the write lock first). */
  #write<T>(work: () => T): T {
    const db = this.#database();
    db.exec("BEGIN IMMEDIATE");
    try {
      const result = work();
      db.exec("COMMIT");
      return result;
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw error;
    }
  }

  #term(): number {
    const row = this.#statement("readTerm").get() as unknown as Row;
    return Number(row[0]);
  }

  /** Refuses an older term; makes a newer one the newest. Inside the commit's transaction. */
  #checkTerm(term: number): void {
    const newest = this.#term();
    if (term < newest) throw new StaleTermError(term, newest);
    if (term > newest) this.#run("writeTerm", term);
  }

  #apply(change: Change, added: [EventRecord, number][]): void {
    switch (change.op) {
      case "putJob":
        this.#run("putJob", ...(CODEC.jobs.encode(change.job) as SqlValue[]));
        return;
      case "putTasks":
        this.#putTasks(change.tasks);
        return;
      case "putAttempt":
        this.#run("putAttempt", ...(CODEC.attempts.encode(change.attempt) as SqlValue[]));
        return;
      case "addEvent": {
        const row = this.#statement("addEvent").get(
          ...(CODEC.events.encode(change.event) as SqlValue[]),
        ) as unknown as Row;
        added.push([change.event, Number(row[0])]);
        return;
      }
      case "putHost":
        this.#run("putHost", ...(CODEC.hosts.encode(change.host) as SqlValue[]));
        return;
      case "deleteHost":
        this.#run("deleteHost", change.name);
        return;
      case "putToken":
        this.#run("putToken", ...(CODEC.tokens.encode(change.token) as SqlValue[]));
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
        const row = CODEC.tasks.encode(tasks[start + i]) as SqlValue[];
        for (let column = 0; column < TASK_PARAMETERS; column++)
          values[i * TASK_PARAMETERS + column] = row[column];
      }
      chunk.run(...values);
    }
    const one = this.#statement("putTask");
    for (; start < tasks.length; start++) one.run(...(CODEC.tasks.encode(tasks[start]) as SqlValue[]));
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

  /**
   * Every row of a load, decoded as it is read: a row array lives only until its record is made,
   * so a million rows are not all held twice (the garbage collector's work at start was most of it).
   */
  #decoded<R>(name: StatementName, codec: RowCodec<R>): R[] {
    const records: R[] = [];
    for (const row of this.#statement(name).iterate()) records.push(codec.decode(row as unknown as Row));
    return records;
  }

  #rows(name: StatementName, ...values: SqlValue[]): Row[] {
    return this.#statement(name).all(...values) as unknown as Row[];
  }
}

/** The migration runner's view of a SQLite database: BEGIN IMMEDIATE makes it exclusive. */
function migrationDialect(db: DatabaseSync): MigrationDialect {
  return {
    async exclusive(work) {
      db.exec("BEGIN IMMEDIATE");
      try {
        db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
          version INTEGER PRIMARY KEY NOT NULL,
          name TEXT NOT NULL,
          applied_at INTEGER NOT NULL
        )`);
        await work({
          exec: async (sql) => db.exec(sql),
          appliedVersions: async () =>
            db
              .prepare("SELECT version FROM schema_migrations")
              .all()
              .map((row) => Number(row.version)),
          record: async (migration, at) => {
            db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
              migration.version,
              migration.name,
              at,
            );
          },
        });
        db.exec("COMMIT");
      } catch (error) {
        if (db.isTransaction) db.exec("ROLLBACK");
        throw error;
      }
    },
  };
}
