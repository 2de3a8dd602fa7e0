// A whole commit as one PostgreSQL statement, for the commits that are puts alone (no delete) with
// at most one put of a key per table: every table's rows as one INSERT ... ON CONFLICT over UNNEST
// of column arrays, each a data-modifying WITH clause of one statement, run outside BEGIN/COMMIT as
// its own transaction. One round trip where a transaction takes BEGIN, the term's lock, a statement
// per table and COMMIT; the answer comes once the commit is durable, as for a COMMIT.
//
// The term rule holds in the statement: its first clause locks the leadership row (FOR UPDATE, as
// the transaction's first statement does), and every write is guarded by that row naming the
// commit's own term, so a commit of a deposed term writes nothing. The statement answers the term
// it found; another term than its own is for the caller to act on (a newer one: refused; an older
// one: the commit goes by the transaction, which records the new term).

import type { QueryArrayConfig } from "pg";
import type { ColumnType, RowValue } from "./schema.ts";

/** A table as the statement writes it. */
export interface PutTable {
  name: string;
  key: readonly string[];
  columns: readonly { name: string; type: ColumnType }[];
}

/** One table's rows, as one array per column (UNNEST's arguments). */
export interface PutRows {
  table: PutTable;
  columns: RowValue[][];
}

const LEAD = "lead AS MATERIALIZED (SELECT term FROM leadership WHERE id = 1 FOR UPDATE)";
const GUARD = "WHERE EXISTS (SELECT 1 FROM lead WHERE term = $1)";

/** `$n::type[]` for each column, numbered from `first`. */
function arrays(columns: PutTable["columns"], first: number): string {
  return columns.map((column, i) => `$${first + i}::${column.type}[]`).join(", ");
}

function upsertClause(table: PutTable, first: number): string {
  const names = table.columns.map((column) => column.name).join(", ");
  const updates = table.columns
    .filter((column) => !table.key.includes(column.name))
    .map((column) => `${column.name} = excluded.${column.name}`)
    .join(", ");
  return (
    `put_${table.name} AS (INSERT INTO ${table.name} (${names}) ` +
    `SELECT * FROM unnest(${arrays(table.columns, first)}) ${GUARD} ` +
    `ON CONFLICT (${table.key.join(", ")}) DO UPDATE SET ${updates})`
  );
}

/** Inserted in array order (ORDER BY the ordinality), so the identity ids follow it. */
function eventsClause(table: PutTable, first: number): string {
  const names = table.columns.map((column) => column.name).join(", ");
  return (
    `put_${table.name} AS (INSERT INTO ${table.name} (${names}) SELECT ${names} ` +
    `FROM unnest(${arrays(table.columns, first)}) WITH ORDINALITY AS u(${names}, n) ${GUARD} ` +
    "ORDER BY n RETURNING id)"
  );
}

/**
 * New jobs' untouched tasks as ranges (new-task-ranges.ts), one entry a job: each job's task rows
 * below its count are deleted and its range put. The batch writes no task row of these jobs (the
 * order of the two would matter, and one statement has none).
 */
export interface NewTaskRangeRows {
  jobIds: string[];
  states: string[];
  counts: number[];
}

function newTaskRangeClauses(first: number): string[] {
  const [jobIds, states, counts] = [first, first + 1, first + 2];
  return [
    `clear_tasks AS (DELETE FROM tasks USING unnest($${jobIds}::text[], $${counts}::bigint[]) ` +
      `AS r(job_id, count) WHERE tasks.job_id = r.job_id AND tasks.idx < r.count AND EXISTS (SELECT 1 FROM lead WHERE term = $1))`,
    `put_new_tasks AS (INSERT INTO new_tasks (job_id, state, count) ` +
      `SELECT * FROM unnest($${jobIds}::text[], $${states}::text[], $${counts}::bigint[]) ${GUARD} ` +
      "ON CONFLICT (job_id) DO UPDATE SET state = excluded.state, count = excluded.count)",
  ];
}

/** What the statement answers: the term the store holds, and the new events' ids in insert order. */
export interface OneStatementAnswer {
  term: number;
  eventIds: number[];
}

/**
 * The statement for `term` writing `puts` (upserts; no table twice, no key twice in a table) and
 * inserting `events` (null for none). Named by the tables it writes: each pooled connection parses
 * and plans each shape once.
 */
export function commitStatement(
  term: number,
  puts: readonly PutRows[],
  events: PutRows | null,
  ranges: NewTaskRangeRows | null = null,
): QueryArrayConfig {
  const clauses = [LEAD];
  const values: unknown[] = [term];
  for (const put of puts) {
    clauses.push(upsertClause(put.table, values.length + 1));
    values.push(...put.columns);
  }
  if (ranges) {
    clauses.push(...newTaskRangeClauses(values.length + 1));
    values.push(ranges.jobIds, ranges.states, ranges.counts);
  }
  if (events) {
    clauses.push(eventsClause(events.table, values.length + 1));
    values.push(...events.columns);
  }
  const ids = events ? `ARRAY(SELECT id FROM put_${events.table.name} ORDER BY id)` : "NULL::bigint[]";
  const shape = [
    ...puts.map((put) => put.table.name),
    ...(ranges ? ["new_tasks"] : []),
    ...(events ? [events.table.name] : []),
  ];
  return {
    name: `steward_commit_${shape.join("_")}`,
    text: `WITH ${clauses.join(", ")} SELECT (SELECT term FROM lead), ${ids}`,
    values,
    rowMode: "array",
  };
}

/** The answer's one row: the term (none when the leadership row is missing) and the ids. */
export function readAnswer(row: readonly unknown[]): OneStatementAnswer {
  const [term, ids] = row as [unknown, unknown[] | null];
  return { term: term === null ? 0 : Number(term), eventIds: (ids ?? []).map(Number) };
}
