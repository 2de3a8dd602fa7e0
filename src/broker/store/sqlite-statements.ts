// SQLite's statements and row codecs, shared by the store's reading connection (sqlite.ts) and
// its writing one (sqlite-writes.ts, in the writer thread), and how both connections are opened.

import { join } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { accountingSql } from "./accounting-sql.ts";
import { loadSql } from "./load-sql.ts";
import { MIGRATIONS_DIR } from "./migrate.ts";
import { LIVE_IDS, recoverySql } from "./recovery-sql.ts";
import {
  ATTEMPTS,
  CHECKPOINT_PARTS,
  columnNames,
  type Dialect,
  EVENTS,
  HOSTS,
  JOBS,
  META,
  rowCodecs,
  SECRETS,
  TASKS,
  type Table,
  TOKENS,
  WORKFLOWS,
} from "./schema.ts";

/** What SQLite binds: booleans go in as 0/1 (see DIALECT). */
export type SqlValue = string | number | null;
export type Row = readonly unknown[];

export const SQLITE_MIGRATIONS_DIR = join(MIGRATIONS_DIR, "sqlite");

import { newTaskRangeSql } from "./new-task-ranges.ts";

const BUSY_TIMEOUT_MS = 10_000;

/** SQLite keeps booleans as 0/1 and JSON as text. */
const DIALECT: Dialect = {
  bool: (value) => (value ? 1 : 0),
  readBool: (value) => value === 1,
  readJson: (value) => JSON.parse(value as string),
};

export const CODEC = rowCodecs(DIALECT);

// Task and attempt rows are put this many to a statement: half the time of one row per statement at
// 100,000 tasks, and 100 rows of either table's columns stay under SQLite's limit of parameters
// (32,766 since 3.32).
export const ROWS_PER_STATEMENT = 100;
export const ROW_PARAMETERS = { tasks: TASKS.columns.length, attempts: ATTEMPTS.columns.length };
/** The statements that put one row, and ROWS_PER_STATEMENT rows, of each table. */
export const ROW_STATEMENTS = {
  tasks: { one: "putTask", chunk: "putTaskChunk" },
  attempts: { one: "putAttempt", chunk: "putAttemptChunk" },
} as const;

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

const RECOVERY = recoverySql({
  countIf: (condition) => `sum(${condition})`,
  specCpus: "coalesce(json_extract(j.spec, '$.resources.cpus'), 1)",
  specQos: "coalesce(json_extract(j.spec, '$.qos'), 'normal')",
  placementHosts: "max(1, coalesce(json_array_length(a.placement), 1))",
  measuredCpuMs: "(json_extract(a.usage, '$.userSeconds') + json_extract(a.usage, '$.systemSeconds')) * 1000",
  param: () => "?",
});

const SQL = {
  ...RECOVERY,
  // Numbered placeholders: a query may name one twice.
  ...accountingSql((n) => `?${n}`),
  ...loadSql(() => "?"),
  putJob: upsert(JOBS),
  putTask: upsert(TASKS),
  putTaskChunk: upsert(TASKS, ROWS_PER_STATEMENT),
  putAttempt: upsert(ATTEMPTS),
  putAttemptChunk: upsert(ATTEMPTS, ROWS_PER_STATEMENT),
  putHost: upsert(HOSTS),
  putToken: upsert(TOKENS),
  putSecret: upsert(SECRETS),
  deleteSecret: "DELETE FROM secrets WHERE owner = ? AND name = ?",
  putWorkflow: upsert(WORKFLOWS),
  setMeta: upsert(META),
  putCheckpointPart: upsert(CHECKPOINT_PARTS),
  deleteCheckpointPart:
    "DELETE FROM checkpoint_parts WHERE job_id = ? AND task_index = ? AND rank = ? AND generation = ?",
  deleteJobCheckpointParts: "DELETE FROM checkpoint_parts WHERE job_id = ?",
  addEvent: `INSERT INTO events (${columnNames(EVENTS.columns)}) VALUES (${EVENTS.columns.map(() => "?").join(", ")}) RETURNING id`,
  deleteHost: "DELETE FROM hosts WHERE name = ?",
  ...newTaskRangeSql(() => "?", LIVE_IDS),
  deleteJobAttempts: "DELETE FROM attempts WHERE job_id = ?",
  deleteJobTasks: "DELETE FROM tasks WHERE job_id = ?",
  deleteJobEvents: "DELETE FROM events WHERE job_id = ?",
  deleteJob: "DELETE FROM jobs WHERE id = ?",
  readTerm: "SELECT term FROM leadership WHERE id = 1",
  writeTerm: "UPDATE leadership SET term = ? WHERE id = 1",
  readSequence: "SELECT next FROM sequences WHERE name = ?",
  writeSequence:
    "INSERT INTO sequences (name, next) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET next = excluded.next",
} as const;

export type StatementName = keyof typeof SQL;

/**
 * Opens a connection: WAL with synchronous=FULL, so that a commit that returned survives kill -9
 * and power loss (guarantee 1). Both settings are the connection's, so every connection sets them.
 */
export function openConnection(path: string): DatabaseSync {
  const db = new DatabaseSync(path, { timeout: BUSY_TIMEOUT_MS });
  try {
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = FULL");
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** A connection's prepared statements, made on first use; rows come back as arrays (cheaper than objects). */
export class Statements {
  readonly db: DatabaseSync;
  readonly #prepared = new Map<StatementName, StatementSync>();

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  get(name: StatementName): StatementSync {
    let statement = this.#prepared.get(name);
    if (!statement) {
      statement = this.db.prepare(SQL[name]);
      statement.setReturnArrays(true);
      this.#prepared.set(name, statement);
    }
    return statement;
  }

  run(name: StatementName, ...values: SqlValue[]): void {
    this.get(name).run(...values);
  }

  rows(name: StatementName, ...values: SqlValue[]): Row[] {
    return this.get(name).all(...values) as unknown as Row[];
  }

  clear(): void {
    this.#prepared.clear();
  }
}
