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
): QueryArrayConfig {
  const clauses = [LEAD];
  const values: unknown[] = [term];
  for (const put of puts) {
    clauses.push(upsertClause(put.table, values.length + 1));
    values.push(...put.columns);
  }
  if (events) {
    clauses.push(eventsClause(events.table, values.length + 1));
    values.push(...events.columns);
  }
  const ids = events ? `ARRAY(SELECT id FROM put_${events.table.name} ORDER BY id)` : "NULL::bigint[]";
  const shape = [...puts.map((put) => put.table.name), ...(events ? [events.table.name] : [])];
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
