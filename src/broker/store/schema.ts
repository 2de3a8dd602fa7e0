// The one description of the stored records: for each table, its columns in order, the record field
// each holds and its type. Both stores derive from it their statements (column lists, upserts,
// selects) and their row codecs; the SQL migrations create the same columns, which a conformance
// test checks against this file. A new field is a line here and a migration for each database.

import type {
  AccountingRecord,
  AttemptRecord,
  CheckpointPart,
  EventRecord,
  HostRecord,
  JobRecord,
  SecretRecord,
  StopIntent,
  TaskRecord,
  TokenRecord,
  WorkflowRecord,
} from "../../common/model/records.ts";
import { reasonFromText, type StopReason } from "../../common/model/stop-reasons.ts";

/** The types a column may have; each database says how it keeps them (see Dialect). */
export type ColumnType = "text" | "integer" | "bigint" | "boolean" | "json";

export interface Column<R> {
  /** The SQL column. */
  name: string;
  /** The record field it holds. */
  field: keyof R & string;
  type: ColumnType;
  /** Whether the column takes NULL (the field's null). */
  nullable: boolean;
  /** For a json column: reads a value (not null) an earlier version may have written in another shape as this version's. */
  upgrade?: (value: unknown) => unknown;
}

export interface Table<R> {
  name: string;
  /** The primary key's columns: puts are upserts on it. */
  key: readonly string[];
  /** The columns a put writes, in order. */
  columns: readonly Column<R>[];
  /** Columns the database fills on insert (an identity), read back but never written. */
  generated: readonly Column<R>[];
  /** ORDER BY of a full load. */
  loadOrder: string;
}

function column<R>(name: string, field: keyof R & string, type: ColumnType, nullable = false): Column<R> {
  return { name, field, type, nullable };
}

/** A stop intent as stored: an earlier version wrote its reason as text (model/stop-reasons.ts reads it). */
function storedStopIntent(value: unknown): StopIntent {
  const stored = value as Omit<StopIntent, "reason"> & { reason: StopReason | string };
  return typeof stored.reason === "string"
    ? { ...stored, reason: reasonFromText(stored.reason) }
    : (stored as StopIntent);
}

export interface MetaEntry {
  key: string;
  value: string;
}

export const JOBS: Table<JobRecord> = {
  name: "jobs",
  key: ["id"],
  columns: [
    column("id", "id", "text"),
    column("name", "name", "text"),
    column("owner", "owner", "text"),
    column("state", "state", "text"),
    column("priority", "priority", "bigint"),
    column("held", "held", "boolean"),
    column("cancel_requested", "cancelRequested", "boolean"),
    column("created_at", "createdAt", "bigint"),
    column("ended_at", "endedAt", "bigint", true),
    column("spec", "spec", "json"),
    column("inputs", "inputs", "json"),
    column("input_digests", "inputDigests", "json", true),
    column("submit_key", "submitKey", "text", true),
    column("dynamic_requirements", "dynamicRequirements", "text", true),
    column("slow_hosts", "slowHosts", "json"),
    column("workflow", "workflow", "json", true),
  ],
  generated: [],
  loadOrder: "created_at, id",
};

export const TASKS: Table<TaskRecord> = {
  name: "tasks",
  key: ["job_id", "idx"],
  columns: [
    column("job_id", "jobId", "text"),
    column("idx", "index", "integer"),
    column("state", "state", "text"),
    column("attempts", "attempts", "integer"),
    column("failures", "failures", "integer"),
    column("losses", "losses", "integer"),
    column("system_failures", "systemFailures", "integer"),
    column("not_before", "notBefore", "bigint", true),
    column("result_attempt", "resultAttempt", "integer", true),
    column("checkpoint", "checkpoint", "json", true),
    column("migration", "migration", "json", true),
    column("memory_mb", "memoryMb", "integer", true),
  ],
  generated: [],
  loadOrder: "job_id, idx",
};

export const ATTEMPTS: Table<AttemptRecord> = {
  name: "attempts",
  key: ["job_id", "task_index", "number"],
  columns: [
    column("job_id", "jobId", "text"),
    column("task_index", "taskIndex", "integer"),
    column("number", "number", "integer"),
    column("host", "host", "text"),
    column("placement", "placement", "json"),
    column("state", "state", "text"),
    column("outcome", "outcome", "text", true),
    column("reason", "reason", "text", true),
    column("exit_code", "exitCode", "integer", true),
    column("restarted", "restarted", "boolean"),
    column("started_at", "startedAt", "bigint"),
    column("ended_at", "endedAt", "bigint", true),
    { ...column<AttemptRecord>("stop", "stop", "json", true), upgrade: storedStopIntent },
    column("memory_mb", "memoryMb", "integer", true),
    column("usage", "usage", "json", true),
  ],
  generated: [],
  loadOrder: "job_id, task_index, number",
};

/** Ended attempts of removed jobs, kept for `steward acct` (store/accounting-sql.ts). */
export const ACCOUNTING: Table<AccountingRecord> = {
  name: "accounting",
  key: ["job_id", "task_index", "number"],
  columns: [
    column("job_id", "jobId", "text"),
    column("job_name", "jobName", "text"),
    column("owner", "owner", "text"),
    column("task_index", "taskIndex", "integer"),
    column("number", "number", "integer"),
    column("host", "host", "text"),
    column("outcome", "outcome", "text", true),
    column("exit_code", "exitCode", "integer", true),
    column("started_at", "startedAt", "bigint"),
    column("ended_at", "endedAt", "bigint"),
    column("usage", "usage", "json", true),
  ],
  generated: [],
  loadOrder: "ended_at, job_id, task_index, number",
};

export const EVENTS: Table<EventRecord> = {
  name: "events",
  key: ["id"],
  columns: [
    column("job_id", "jobId", "text"),
    column("at", "at", "bigint"),
    column("kind", "kind", "text"),
    column("data", "data", "json"),
    column("message", "message", "text"),
  ],
  generated: [column("id", "id", "bigint")],
  loadOrder: "id",
};

export const HOSTS: Table<HostRecord> = {
  name: "hosts",
  key: ["name"],
  columns: [
    column("name", "name", "text"),
    column("pool", "pool", "text"),
    column("state", "state", "text"),
    column("slots", "slots", "integer"),
    column("labels", "labels", "json"),
    column("facts", "facts", "json"),
    column("last_seen", "lastSeen", "bigint"),
    column("ends_at", "endsAt", "bigint", true),
  ],
  generated: [],
  loadOrder: "name",
};

export const TOKENS: Table<TokenRecord> = {
  name: "tokens",
  key: ["id"],
  columns: [
    column("id", "id", "text"),
    column("kind", "kind", "text"),
    column("subject", "subject", "text"),
    column("role", "role", "text", true),
    column("pool", "pool", "text", true),
    column("parent", "parent", "text", true),
    column("hash", "hash", "text"),
    column("created_at", "createdAt", "bigint"),
    column("created_by", "createdBy", "text"),
    column("expires_at", "expiresAt", "bigint", true),
    column("revoked_at", "revokedAt", "bigint", true),
    column("user_group", "group", "text", true),
    column("qos", "qos", "json", true),
  ],
  generated: [],
  loadOrder: "created_at, id",
};

/** Users' secrets (model/records.ts SecretRecord), by owner and name: read whole at start. */
export const SECRETS: Table<SecretRecord> = {
  name: "secrets",
  key: ["owner", "name"],
  columns: [
    column("owner", "owner", "text"),
    column("name", "name", "text"),
    column("value", "value", "json"),
    column("created_at", "createdAt", "bigint"),
    column("updated_at", "updatedAt", "bigint"),
  ],
  generated: [],
  loadOrder: "owner, name",
};

export const META: Table<MetaEntry> = {
  name: "meta",
  key: ["key"],
  columns: [column("key", "key", "text"), column("value", "value", "text")],
  generated: [],
  loadOrder: "key",
};

export const CHECKPOINT_PARTS: Table<CheckpointPart> = {
  name: "checkpoint_parts",
  key: ["job_id", "task_index", "rank", "generation"],
  columns: [
    column("job_id", "jobId", "text"),
    column("task_index", "taskIndex", "integer"),
    column("rank", "rank", "integer"),
    column("generation", "generation", "bigint"),
    column("attempt", "attempt", "integer"),
    column("files", "files", "json"),
    column("bytes", "bytes", "bigint"),
    column("at", "at", "bigint"),
  ],
  generated: [],
  loadOrder: "job_id, task_index, rank, generation",
};

/** Workflows (model/workflow.ts): their jobs by name with the edges, as made at submit. */
export const WORKFLOWS: Table<WorkflowRecord> = {
  name: "workflows",
  key: ["id"],
  columns: [
    column("id", "id", "text"),
    column("name", "name", "text", true),
    column("owner", "owner", "text"),
    column("created_at", "createdAt", "bigint"),
    column("jobs", "jobs", "json"),
    column("submit_key", "submitKey", "text", true),
  ],
  generated: [],
  loadOrder: "created_at, id",
};

/** A table whatever its record: what the check of the migrations against this file reads. */
export interface TableShape {
  name: string;
  key: readonly string[];
  columns: readonly { name: string; field: string; type: ColumnType; nullable: boolean }[];
  generated: readonly { name: string; field: string; type: ColumnType; nullable: boolean }[];
}

/** Every table of records, for the check that the migrations made what this file says. */
export const TABLES: readonly TableShape[] = [
  JOBS,
  TASKS,
  ATTEMPTS,
  EVENTS,
  HOSTS,
  TOKENS,
  META,
  CHECKPOINT_PARTS,
  ACCOUNTING,
  WORKFLOWS,
  SECRETS,
];

// ---- codecs

export type RowValue = string | number | boolean | null;

/** How a database keeps what SQL has no common type for. */
export interface Dialect {
  /** A boolean as bound (SQLite: 0/1, PostgreSQL: boolean). */
  bool(value: boolean): number | boolean;
  readBool(value: unknown): boolean;
  /** A json column as read back: text to parse (SQLite) or already parsed (PostgreSQL). */
  readJson(value: unknown): unknown;
}

function json(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError("value cannot be stored as JSON");
  return text;
}

export interface RowCodec<R> {
  /** The record's values in the order of `table.columns`. */
  encode(record: R): RowValue[];
  /** A row read with `selectColumns(table)` (generated columns first) back into a record. */
  decode(row: readonly unknown[]): R;
}

/** The columns a load reads: generated ones first, then the written ones. */
export function selectColumns<R>(table: Table<R>): Column<R>[] {
  return [...table.generated, ...table.columns];
}

export function columnNames<R>(columns: readonly Column<R>[]): string {
  return columns.map((each) => each.name).join(", ");
}

type Encoder = (value: unknown) => RowValue;
type Decoder = (value: unknown) => unknown;

function encoder(column: Column<unknown>, dialect: Dialect, table: string): Encoder {
  // A null goes to the database as it is: NOT NULL there refuses it, with the column's name.
  switch (column.type) {
    case "boolean":
      return (value) => {
        if (value === null || value === undefined) return null;
        // A database would read 1 or "yes" as true; the store refuses anything but a boolean.
        if (typeof value !== "boolean") {
          throw new TypeError(`${table}.${column.name}: expected a boolean, got ${typeof value}`);
        }
        return dialect.bool(value);
      };
    case "json":
      return (value) => (value === null || value === undefined ? null : json(value));
    default:
      return (value) => (value === undefined ? null : (value as RowValue));
  }
}

function decoder(column: Column<unknown>, dialect: Dialect): Decoder {
  switch (column.type) {
    case "boolean":
      return (value) => dialect.readBool(value);
    case "json": {
      const upgrade = column.upgrade;
      if (upgrade) return (value) => (value === null ? null : upgrade(dialect.readJson(value)));
      return (value) => (value === null ? null : dialect.readJson(value));
    }
    default:
      return (value) => value;
  }
}

function rowCodec<R>(table: Table<R>, dialect: Dialect): RowCodec<R> {
  const written = table.columns as readonly Column<unknown>[];
  const fields = written.map((each) => each.field);
  const encoders = written.map((each) => encoder(each, dialect, table.name));
  const read = selectColumns(table) as Column<unknown>[];
  const readFields = read.map((each) => each.field);
  const decoders = read.map((each) => decoder(each, dialect));
  return {
    encode(record) {
      const source = record as Record<string, unknown>;
      const row = new Array<RowValue>(fields.length);
      for (let i = 0; i < fields.length; i++) row[i] = encoders[i](source[fields[i]]);
      return row;
    },
    decode(row) {
      const record: Record<string, unknown> = {};
      for (let i = 0; i < readFields.length; i++) record[readFields[i]] = decoders[i](row[i]);
      return record as R;
    },
  };
}

/** A row codec of every table, for one dialect: what each store encodes and decodes with. */
export function rowCodecs(dialect: Dialect) {
  return {
    jobs: rowCodec(JOBS, dialect),
    tasks: rowCodec(TASKS, dialect),
    attempts: rowCodec(ATTEMPTS, dialect),
    events: rowCodec(EVENTS, dialect),
    hosts: rowCodec(HOSTS, dialect),
    tokens: rowCodec(TOKENS, dialect),
    meta: rowCodec(META, dialect),
    checkpointParts: rowCodec(CHECKPOINT_PARTS, dialect),
    accounting: rowCodec(ACCOUNTING, dialect),
    workflows: rowCodec(WORKFLOWS, dialect),
    secrets: rowCodec(SECRETS, dialect),
  };
}
