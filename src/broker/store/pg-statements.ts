// The PostgreSQL store's statements, named and prepared once per pooled connection: upserts of
// whole column arrays (UNNEST) per table, the loads, recovery and accounting queries shared with
// SQLite (load-sql.ts, recovery-sql.ts, accounting-sql.ts), and the leadership and id-block statements.

import { type PoolClient, TypeOverrides, types } from "pg";
import { accountingSql } from "./accounting-sql.ts";
import { loadSql } from "./load-sql.ts";
import { newTaskRangeSql } from "./new-task-ranges.ts";
import type { BoundedQuery } from "./pg-bounds.ts";
import { LIVE_IDS, recoverySql } from "./recovery-sql.ts";
import {
  ATTEMPTS,
  CHECKPOINT_PARTS,
  type Column,
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

// bigint columns (times, priority) come back as strings by default; they hold JavaScript numbers.
export const TYPES = new TypeOverrides();
TYPES.setTypeParser(types.builtins.INT8, Number);

export type Row = unknown[];

/** PostgreSQL keeps booleans as booleans; json columns come back parsed. */
const DIALECT: Dialect = {
  bool: (value) => value,
  readBool: (value) => value as boolean,
  readJson: (value) => value,
};

export const CODEC = rowCodecs(DIALECT);

/** The column arrays $1..$n, typed, for UNNEST. */
function arrays<R>(columns: readonly Column<R>[]): string {
  return columns.map((column, i) => `$${i + 1}::${column.type}[]`).join(", ");
}

/** INSERT of one row per element of the column arrays, replacing the rows already there; the arrays must not name one key twice. */
function upsertUnnest<R>(table: Table<R>): string {
  const updates = table.columns
    .filter((column) => !table.key.includes(column.name))
    .map((column) => `${column.name} = excluded.${column.name}`)
    .join(", ");
  return (
    `INSERT INTO ${table.name} (${columnNames(table.columns)}) SELECT * FROM unnest(${arrays(table.columns)}) ` +
    `ON CONFLICT (${table.key.join(", ")}) DO UPDATE SET ${updates}`
  );
}

const EVENT_NAMES = columnNames(EVENTS.columns);

const RECOVERY = recoverySql({
  countIf: (condition) => `count(*) FILTER (WHERE ${condition})`,
  specCpus: "coalesce((j.spec->'resources'->>'cpus')::float8, 1)",
  specQos: "coalesce(j.spec->>'qos', 'normal')",
  placementHosts: "greatest(1, coalesce(json_array_length(a.placement), 1))",
  measuredCpuMs: "((a.usage->>'userSeconds')::float8 + (a.usage->>'systemSeconds')::float8) * 1000",
  param: (n) => `$${n}`,
});

const NEW_TASK_RANGES = newTaskRangeSql((n) => `$${n}`, LIVE_IDS);

export const SQL = {
  ...RECOVERY,
  ...accountingSql((n) => `$${n}`),
  ...loadSql((n) => `$${n}`),
  putJobs: upsertUnnest(JOBS),
  putTasks: upsertUnnest(TASKS),
  putAttempts: upsertUnnest(ATTEMPTS),
  // Rows are inserted in array order (ORDER BY the ordinality), so the identity ids follow it.
  addEvents:
    `INSERT INTO events (${EVENT_NAMES}) SELECT ${EVENT_NAMES} FROM unnest(${arrays(EVENTS.columns)}) ` +
    `WITH ORDINALITY AS u(${EVENT_NAMES}, n) ORDER BY n RETURNING id`,
  putHosts: upsertUnnest(HOSTS),
  putTokens: upsertUnnest(TOKENS),
  putSecrets: upsertUnnest(SECRETS),
  deleteSecret: "DELETE FROM secrets WHERE owner = $1 AND name = $2",
  putWorkflows: upsertUnnest(WORKFLOWS),
  setMeta: upsertUnnest(META),
  putCheckpointParts: upsertUnnest(CHECKPOINT_PARTS),
  deleteHost: "DELETE FROM hosts WHERE name = $1",
  ...NEW_TASK_RANGES,
  // One round trip: rows of tasks 0 to count-1 go (none, for a new job), the range is put.
  putNewTasks: `WITH c AS (DELETE FROM tasks WHERE job_id = $1 AND idx < $3) ${NEW_TASK_RANGES.putNewTaskRange}`,
  deleteCheckpointPart:
    "DELETE FROM checkpoint_parts WHERE job_id = $1 AND task_index = $2 AND rank = $3 AND generation = $4",
  // Data-modifying WITH clauses run whether or not they are referenced: one round trip for all six.
  deleteJob:
    "WITH a AS (DELETE FROM attempts WHERE job_id = $1), t AS (DELETE FROM tasks WHERE job_id = $1), " +
    "e AS (DELETE FROM events WHERE job_id = $1), c AS (DELETE FROM checkpoint_parts WHERE job_id = $1), " +
    "n AS (DELETE FROM new_tasks WHERE job_id = $1) " +
    "DELETE FROM jobs WHERE id = $1",
  // The row lock serializes commits: a commit of an older term waits for the newer one, then is refused.
  lockTerm: "SELECT term FROM leadership WHERE id = 1 FOR UPDATE",
  readTerm: "SELECT term FROM leadership WHERE id = 1",
  writeTerm: "UPDATE leadership SET term = $1 WHERE id = 1",
  // Row locks make these one at a time with commits: a commit of the old term that was waiting runs
  // after the new term is in, and is refused.
  tryLead:
    "UPDATE leadership SET term = term + 1, leader = $1, lease_until = now() + make_interval(secs => $2) " +
    "WHERE id = 1 AND (lease_until IS NULL OR lease_until <= now() OR leader = $1) RETURNING term",
  renewLease:
    "UPDATE leadership SET lease_until = now() + make_interval(secs => $2) WHERE id = 1 AND term = $1 RETURNING term",
  leadership: "SELECT term, leader, coalesce(lease_until > now(), false) FROM leadership WHERE id = 1",
  resign: "UPDATE leadership SET lease_until = now() WHERE id = 1 AND term = $1",
  reserveIds:
    "INSERT INTO sequences AS s (name, next) VALUES ($1, 1 + $2::bigint) " +
    "ON CONFLICT (name) DO UPDATE SET next = s.next + $2::bigint RETURNING next - $2::bigint",
  // The same in one statement, written only when the leadership row names the term $1 (locked as a
  // commit's first statement locks it); answers the term found and the first id (null when not written).
  reserveIdsInOneStatement:
    "WITH lead AS MATERIALIZED (SELECT term FROM leadership WHERE id = 1 FOR UPDATE), " +
    "reserved AS (INSERT INTO sequences AS s (name, next) SELECT $2, 1 + $3::bigint " +
    "WHERE EXISTS (SELECT 1 FROM lead WHERE term = $1) " +
    "ON CONFLICT (name) DO UPDATE SET next = s.next + $3::bigint RETURNING next - $3::bigint) " +
    "SELECT (SELECT term FROM lead), (SELECT * FROM reserved)",
} as const;

export type StatementName = keyof typeof SQL;

/** `answerMs`: how long it may go unanswered, when not the pool's bound (pg-bounds.ts). */
export function query(name: StatementName, values: unknown[], answerMs?: number): BoundedQuery {
  // Named: each pooled connection parses and plans a statement once.
  return {
    name: `steward_${name}`,
    text: SQL[name],
    values,
    rowMode: "array",
    ...(answerMs === undefined ? {} : { query_timeout: answerMs }),
  };
}

export async function run(
  client: PoolClient,
  name: StatementName,
  values: unknown[],
  answerMs?: number,
): Promise<void> {
  await client.query(query(name, values, answerMs));
}

export async function rows(
  client: PoolClient,
  name: StatementName,
  values: unknown[] = [],
  answerMs?: number,
): Promise<Row[]> {
  return (await client.query(query(name, values, answerMs))).rows;
}
