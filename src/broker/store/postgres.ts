// The high-availability store: PostgreSQL through pg. The same tables and the same rules as the
// SQLite store (src/broker/store/sqlite.ts); both pass test/conformance/store.test.ts.
//
// A commit is one transaction. Within it, the puts between two deletes are gathered per table and
// written as one statement per table (UNNEST of column arrays): puts to different tables commute,
// and puts to one table are upserts where the last one wins, so the result is the batch applied in
// order, in a handful of round trips instead of one per change. A commit of puts alone, with no key
// put twice in a table, is one statement and one round trip (pg-commit-statement.ts).

import { join } from "node:path";
import { escapeIdentifier, Pool, type PoolClient, type QueryArrayConfig, TypeOverrides, types } from "pg";
import type {
  AccountingRecord,
  AttemptRecord,
  CheckpointPart,
  EventRecord,
  HostRecord,
  JobRecord,
  TaskRecord,
  TokenRecord,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { TaskState } from "../../common/model/states.ts";
import { accountingSql } from "./accounting-sql.ts";
import { MIGRATIONS_DIR, type MigrationDialect, migrate, readMigrations } from "./migrate.ts";
import {
  decodeNewTaskRange,
  jobTasksWithUntouched,
  type NewTaskRange,
  newTaskRangeSql,
  taskOrUntouched,
  taskStatesWithUntouched,
  withUntouchedTasks,
} from "./new-task-ranges.ts";
import { commitStatement, type PutRows, readAnswer } from "./pg-commit-statement.ts";
import { inTransaction } from "./pg-transaction.ts";
import { decodeHeader, decodeUsage, LIVE_IDS, recoverySql } from "./recovery-sql.ts";
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
  type MetaEntry,
  type RowCodec,
  type RowValue,
  rowCodecs,
  selectColumns,
  TASKS,
  type Table,
  TOKENS,
  WORKFLOWS,
} from "./schema.ts";
import {
  type AccountingQuery,
  type Change,
  type Elections,
  type LeadershipInfo,
  StaleTermError,
  type Store,
  type StoredJob,
  type StoredTask,
  type StoreSnapshot,
} from "./store.ts";

export const POSTGRES_MIGRATIONS_DIR = join(MIGRATIONS_DIR, "postgres");

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

/** PostgreSQL keeps booleans as booleans; json columns come back parsed. */
const DIALECT: Dialect = {
  bool: (value) => value,
  readBool: (value) => value as boolean,
  readJson: (value) => value,
};

const CODEC = rowCodecs(DIALECT);

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

function selectAll<R>(table: Table<R>): string {
  return `SELECT ${columnNames(selectColumns(table))} FROM ${table.name} ORDER BY ${table.loadOrder}`;
}

const EVENT_NAMES = columnNames(EVENTS.columns);
const EVENT_SELECT = `SELECT ${columnNames(selectColumns(EVENTS))} FROM events`;

const RECOVERY = recoverySql({
  countIf: (condition) => `count(*) FILTER (WHERE ${condition})`,
  specCpus: "coalesce((j.spec->'resources'->>'cpus')::float8, 1)",
  specQos: "coalesce(j.spec->>'qos', 'normal')",
  placementHosts: "greatest(1, coalesce(json_array_length(a.placement), 1))",
  measuredCpuMs: "((a.usage->>'userSeconds')::float8 + (a.usage->>'systemSeconds')::float8) * 1000",
  param: (n) => `$${n}`,
});

const NEW_TASK_RANGES = newTaskRangeSql((n) => `$${n}`, LIVE_IDS);

const SQL = {
  ...RECOVERY,
  ...accountingSql((n) => `$${n}`),
  putJobs: upsertUnnest(JOBS),
  putTasks: upsertUnnest(TASKS),
  putAttempts: upsertUnnest(ATTEMPTS),
  // Rows are inserted in array order (ORDER BY the ordinality), so the identity ids follow it.
  addEvents:
    `INSERT INTO events (${EVENT_NAMES}) SELECT ${EVENT_NAMES} FROM unnest(${arrays(EVENTS.columns)}) ` +
    `WITH ORDINALITY AS u(${EVENT_NAMES}, n) ORDER BY n RETURNING id`,
  putHosts: upsertUnnest(HOSTS),
  putTokens: upsertUnnest(TOKENS),
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
  loadJobs: selectAll(JOBS),
  loadTasks: selectAll(TASKS),
  loadAttempts: selectAll(ATTEMPTS),
  loadHosts: selectAll(HOSTS),
  loadTokens: selectAll(TOKENS),
  loadWorkflows: selectAll(WORKFLOWS),
  loadMeta: selectAll(META),
  loadCheckpointParts: selectAll(CHECKPOINT_PARTS),
  events: `${EVENT_SELECT} WHERE job_id = $1 ORDER BY at, id`,
  eventsAfter: `${EVENT_SELECT} WHERE id > $1 ORDER BY id LIMIT $2`,
  jobEventsAfter: `${EVENT_SELECT} WHERE job_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
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

export class PostgresStore implements Store, Elections {
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
      await migrate(migrationDialect(pool, schema), await readMigrations(POSTGRES_MIGRATIONS_DIR));
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
      jobs: (await rows(client, "loadJobs")).map(CODEC.jobs.decode),
      tasks: await tasksWithUntouched(client, {
        rows: "loadTasks",
        ranges: "loadNewTaskRanges",
        order: "taskJobOrder",
      }),
      attempts: (await rows(client, "loadAttempts")).map(CODEC.attempts.decode),
      hosts: (await rows(client, "loadHosts")).map(CODEC.hosts.decode),
      tokens: (await rows(client, "loadTokens")).map(CODEC.tokens.decode),
      workflows: (await rows(client, "loadWorkflows")).map(CODEC.workflows.decode),
      meta: Object.fromEntries((await rows(client, "loadMeta")).map((row) => [row[0], row[1]])),
      checkpointParts: (await rows(client, "loadCheckpointParts")).map(CODEC.checkpointParts.decode),
    }));
  }

  async loadLive(): Promise<StoreSnapshot> {
    return this.#transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => ({
      jobs: (await rows(client, "liveJobs")).map(CODEC.jobs.decode),
      tasks: await tasksWithUntouched(client, {
        rows: "liveTasks",
        ranges: "liveNewTaskRanges",
        order: "liveTaskJobOrder",
      }),
      attempts: (await rows(client, "liveAttempts")).map(CODEC.attempts.decode),
      ended: (await rows(client, "endedHeaders")).map(decodeHeader),
      usage: (await rows(client, "usage")).map(decodeUsage),
      hosts: (await rows(client, "loadHosts")).map(CODEC.hosts.decode),
      tokens: (await rows(client, "loadTokens")).map(CODEC.tokens.decode),
      workflows: (await rows(client, "loadWorkflows")).map(CODEC.workflows.decode),
      meta: Object.fromEntries((await rows(client, "loadMeta")).map((row) => [row[0], row[1]])),
      checkpointParts: (await rows(client, "liveCheckpointParts")).map(CODEC.checkpointParts.decode),
    }));
  }

  async loadJob(id: string): Promise<StoredJob | null> {
    return this.#transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => {
      const row = (await rows(client, "job", [id]))[0];
      if (!row) return null;
      return {
        job: CODEC.jobs.decode(row),
        tasks: jobTasksWithUntouched(
          (await rows(client, "jobTasks", [id])).map(CODEC.tasks.decode),
          await rangeOf(client, id),
        ),
        attempts: (await rows(client, "jobAttempts", [id])).map(CODEC.attempts.decode),
        checkpointParts: (await rows(client, "jobCheckpointParts", [id])).map(CODEC.checkpointParts.decode),
      };
    });
  }

  async loadJobRecord(id: string): Promise<JobRecord | null> {
    const row = (await this.#connected().query(query("job", [id]))).rows[0];
    return row ? CODEC.jobs.decode(row) : null;
  }

  async loadTask(jobId: string, index: number): Promise<StoredTask | null> {
    return this.#transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => {
      const row = (await rows(client, "task", [jobId, index]))[0];
      const task = taskOrUntouched(
        row && CODEC.tasks.decode(row),
        row ? undefined : await rangeOf(client, jobId),
        index,
      );
      if (!task) return null;
      return {
        task,
        attempts: (await rows(client, "taskAttempts", [jobId, index])).map(CODEC.attempts.decode),
      };
    });
  }

  async loadTaskStates(jobId: string): Promise<TaskState[]> {
    return this.#transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) =>
      taskStatesWithUntouched(await rows(client, "taskStates", [jobId]), await rangeOf(client, jobId)),
    );
  }

  async findSubmission(owner: string, submitKey: string): Promise<string | null> {
    const result = await this.#connected().query(query("submission", [owner, submitKey]));
    return result.rows[0] ? (result.rows[0][0] as string) : null;
  }

  async beginTerm(): Promise<number> {
    return this.#transaction("BEGIN", async (client) => {
      const term = (await termOf(client, "lockTerm")) + 1;
      await run(client, "writeTerm", [term]);
      return term;
    });
  }

  async currentTerm(): Promise<number> {
    const result = await this.#connected().query(query("readTerm", []));
    return Number(result.rows[0][0]);
  }

  async commit(term: number, changes: readonly Change[]): Promise<void> {
    const pool = this.#connected();
    const puts = PendingPuts.ofPutsOnly(changes);
    const statement = puts?.oneStatement(term);
    if (puts && statement) {
      const answer = readAnswer((await pool.query(statement)).rows[0]);
      if (answer.term === term) {
        // Only a committed event gets its id.
        puts.events.forEach((event, i) => {
          event.id = answer.eventIds[i];
        });
        return;
      }
      // Nothing was written: the store holds another term.
      if (answer.term > term) throw new StaleTermError(term, answer.term);
      // An older one: the transaction below makes this term the newest as it commits.
    }
    await this.#commitInTransaction(term, changes);
  }

  /** The commit as one transaction: the term checked (and recorded when newer), then the changes in order. */
  async #commitInTransaction(term: number, changes: readonly Change[]): Promise<void> {
    const batch = new PendingPuts();
    await this.#transaction("BEGIN", async (client) => {
      await checkTerm(client, term);
      for (const change of changes) {
        switch (change.op) {
          case "deleteJob":
            await batch.flush(client);
            await run(client, "keepJobAccounting", [change.jobId]);
            await run(client, "deleteJob", [change.jobId]);
            break;
          case "purgeAccounting":
            await batch.flush(client);
            await run(client, "purgeAccounting", [change.endedBefore]);
            break;
          case "deleteHost":
            await batch.flush(client);
            await run(client, "deleteHost", [change.name]);
            break;
          case "putNewTasks":
            // In order: the puts before it first, those after it (a task placed at once) after.
            await batch.flush(client);
            await run(client, "putNewTasks", [change.jobId, change.state, change.count]);
            break;
          case "deleteCheckpointPart":
            await batch.flush(client);
            await run(client, "deleteCheckpointPart", [
              change.jobId,
              change.taskIndex,
              change.rank,
              change.generation,
            ]);
            break;
          default:
            batch.add(change);
        }
      }
      await batch.flush(client);
    });
    // Only a committed event gets its id.
    for (const [event, id] of batch.added) event.id = id;
  }

  async reserveIds(term: number, sequence: string, count: number): Promise<number> {
    if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`cannot reserve ${count} ids`);
    const found = await this.#connected().query(query("reserveIdsInOneStatement", [term, sequence, count]));
    const [stored, first] = found.rows[0] as [unknown, unknown];
    if (first !== null) return Number(first);
    // Nothing was reserved: the store holds another term (or none).
    const newest = stored === null ? 0 : Number(stored);
    if (newest > term) throw new StaleTermError(term, newest);
    // An older one: the transaction below makes this term the newest as it reserves.
    return this.#transaction("BEGIN", async (client) => {
      await checkTerm(client, term);
      const result = await client.query(query("reserveIds", [sequence, count]));
      return Number(result.rows[0][0]);
    });
  }

  async tryLead(leader: string, leaseSeconds: number): Promise<number | null> {
    const result = await this.#connected().query(query("tryLead", [leader, leaseSeconds]));
    return result.rows.length === 0 ? null : Number(result.rows[0][0]);
  }

  async renewLease(term: number, leaseSeconds: number): Promise<boolean> {
    const result = await this.#connected().query(query("renewLease", [term, leaseSeconds]));
    return result.rows.length > 0;
  }

  async leadership(): Promise<LeadershipInfo> {
    const result = await this.#connected().query(query("leadership", []));
    const [term, leader, valid] = result.rows[0] as [unknown, string | null, boolean];
    return { term: Number(term), leader, leaseValid: valid };
  }

  async resign(term: number): Promise<void> {
    await this.#connected().query(query("resign", [term]));
  }

  async accounting(wanted: AccountingQuery): Promise<AccountingRecord[]> {
    const result = await this.#connected().query(
      wanted.owner === undefined
        ? query("accountingRows", [wanted.since, wanted.limit])
        : query("ownerAccountingRows", [wanted.since, wanted.limit, wanted.owner]),
    );
    return result.rows.map(CODEC.accounting.decode);
  }

  async events(jobId: string): Promise<EventRecord[]> {
    const result = await this.#connected().query(query("events", [jobId]));
    return result.rows.map(CODEC.events.decode);
  }

  async eventsAfter(after: number, limit: number, jobId?: string): Promise<EventRecord[]> {
    const result = await this.#connected().query(
      jobId === undefined
        ? query("eventsAfter", [after, limit])
        : query("jobEventsAfter", [jobId, after, limit]),
    );
    return result.rows.map(CODEC.events.decode);
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

  #transaction<T>(begin: string, work: (client: PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.#connected(), begin, work);
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

async function rows(client: PoolClient, name: StatementName, values: unknown[] = []): Promise<Row[]> {
  return (await client.query(query(name, values))).rows;
}

/** A job's range of untouched tasks (new-task-ranges.ts), if it has one. */
async function rangeOf(client: PoolClient, jobId: string): Promise<NewTaskRange | undefined> {
  const row = (await rows(client, "jobNewTaskRange", [jobId]))[0];
  return row ? decodeNewTaskRange(row) : undefined;
}

/**
 * The tasks of a load: its rows, with the untouched tasks of its ranges made where there is no row
 * (the jobs' order read only when there are ranges: the rows come ordered).
 */
async function tasksWithUntouched(
  client: PoolClient,
  names: { rows: StatementName; ranges: StatementName; order: StatementName },
): Promise<TaskRecord[]> {
  const tasks = (await rows(client, names.rows)).map(CODEC.tasks.decode);
  const ranges = (await rows(client, names.ranges)).map(decodeNewTaskRange);
  if (ranges.length === 0) return tasks;
  const order = (await rows(client, names.order)).map((row) => row[0] as string);
  return withUntouchedTasks(tasks, ranges, () => order);
}

type Put = Exclude<
  Change,
  { op: "deleteJob" | "deleteHost" | "deleteCheckpointPart" | "purgeAccounting" | "putNewTasks" }
>;

/**
 * The puts of a batch since its last delete, per table. Rows that name a key already seen go into
 * a later round, because one INSERT ... ON CONFLICT may not touch a row twice: round n holds the
 * n-th put of each key, so the rounds, applied in order, leave the last put of every key, and
 * every put is still checked by the schema as it would be one by one. A put of the very record
 * that was the key's last put is left out: rows are encoded as they are written, so it would write
 * the same row again.
 */
class PendingPuts {
  jobs = new Rounds<JobRecord>((job) => job.id);
  tasks = new Rounds<TaskRecord>((task) => `${task.jobId}\0${task.index}`);
  attempts = new Rounds<AttemptRecord>((a) => `${a.jobId}\0${a.taskIndex}\0${a.number}`);
  hosts = new Rounds<HostRecord>((host) => host.name);
  tokens = new Rounds<TokenRecord>((token) => token.id);
  workflows = new Rounds<WorkflowRecord>((workflow) => workflow.id);
  meta = new Rounds<MetaEntry>((entry) => entry.key);
  checkpointParts = new Rounds<CheckpointPart>(
    (part) => `${part.jobId}\0${part.taskIndex}\0${part.rank}\0${part.generation}`,
  );
  /** Inserted in the order they were added: their ids keep that order for events(jobId). */
  events: EventRecord[] = [];
  /** New jobs' untouched tasks (putNewTasks), by job: only a batch that is one statement has them. */
  ranges = new Map<string, { state: TaskState; count: number }>();
  /** The jobs whose task rows the batch writes. */
  taskJobs = new Set<string>();
  /** The events inserted so far with the ids they were given. */
  added: [EventRecord, number][] = [];

  /** The batch of these changes when they are all puts; null when one is a delete. */
  static ofPutsOnly(changes: readonly Change[]): PendingPuts | null {
    const batch = new PendingPuts();
    for (const change of changes) {
      if (
        change.op === "deleteJob" ||
        change.op === "deleteHost" ||
        change.op === "deleteCheckpointPart" ||
        change.op === "purgeAccounting"
      )
        return null;
      if (change.op === "putNewTasks") {
        // A job's range once a batch; its task rows are not written in the same batch (checked below).
        if (batch.ranges.has(change.jobId)) return null;
        batch.ranges.set(change.jobId, { state: change.state, count: change.count });
        continue;
      }
      batch.add(change);
    }
    for (const jobId of batch.ranges.keys()) if (batch.taskJobs.has(jobId)) return null;
    return batch;
  }

  /**
   * The whole batch as one statement (pg-commit-statement.ts) for `term`, or null when it does not
   * fit one: a key put twice in a table (two rounds) or more rows in a table than one statement
   * takes; null too when there is nothing to write.
   */
  oneStatement(term: number): QueryArrayConfig | null {
    const puts: PutRows[] = [];
    const tables = [
      [JOBS, this.jobs, CODEC.jobs],
      [TASKS, this.tasks, CODEC.tasks],
      [ATTEMPTS, this.attempts, CODEC.attempts],
      [HOSTS, this.hosts, CODEC.hosts],
      [TOKENS, this.tokens, CODEC.tokens],
      [WORKFLOWS, this.workflows, CODEC.workflows],
      [META, this.meta, CODEC.meta],
      [CHECKPOINT_PARTS, this.checkpointParts, CODEC.checkpointParts],
    ] as const;
    // Whether it fits is known before any row is encoded.
    const rows = tables.map(([, rounds]) => rounds.only());
    if (rows.some((each) => each === null || each.length > ROWS_PER_STATEMENT)) return null;
    if (this.events.length > ROWS_PER_STATEMENT || this.ranges.size > ROWS_PER_STATEMENT) return null;
    tables.forEach(([table, , codec], i) => {
      const only = rows[i] ?? [];
      // Each table's codec matches its table; the tuple's union type does not say so.
      if (only.length > 0) puts.push({ table, columns: columnArrays(only, codec as RowCodec<unknown>) });
    });
    // Nothing to write (a commit that only checks its term): the transaction does that.
    if (puts.length === 0 && this.events.length === 0 && this.ranges.size === 0) return null;
    const events =
      this.events.length === 0 ? null : { table: EVENTS, columns: columnArrays(this.events, CODEC.events) };
    const ranges =
      this.ranges.size === 0
        ? null
        : {
            jobIds: [...this.ranges.keys()],
            states: [...this.ranges.values()].map((range) => range.state),
            counts: [...this.ranges.values()].map((range) => range.count),
          };
    return commitStatement(term, puts, events, ranges);
  }

  add(change: Put): void {
    switch (change.op) {
      case "putJob":
        this.jobs.add(change.job);
        return;
      case "putTasks":
        for (const task of change.tasks) {
          this.tasks.add(task);
          this.taskJobs.add(task.jobId);
        }
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
      case "putToken":
        this.tokens.add(change.token);
        return;
      case "putWorkflow":
        this.workflows.add(change.workflow);
        return;
      case "setMeta":
        this.meta.add({ key: change.key, value: change.value });
        return;
      case "putCheckpointPart":
        this.checkpointParts.add(change.part);
        return;
      default: {
        const unknown: never = change;
        throw new Error(`unknown change: ${JSON.stringify(unknown)}`);
      }
    }
  }

  async flush(client: PoolClient): Promise<void> {
    await write(client, "putJobs", this.jobs.take(), CODEC.jobs);
    await write(client, "putTasks", this.tasks.take(), CODEC.tasks);
    await write(client, "putAttempts", this.attempts.take(), CODEC.attempts);
    const events = this.events;
    this.events = [];
    for (let start = 0; start < events.length; start += ROWS_PER_STATEMENT) {
      const chunk = events.slice(start, start + ROWS_PER_STATEMENT);
      const result = await client.query(query("addEvents", columnArrays(chunk, CODEC.events)));
      // Ids are given in insert order; RETURNING's order is not promised, so they are sorted.
      const ids = result.rows.map((row) => Number(row[0])).sort((a, b) => a - b);
      chunk.forEach((event, i) => {
        this.added.push([event, ids[i]]);
      });
    }
    await write(client, "putHosts", this.hosts.take(), CODEC.hosts);
    await write(client, "putTokens", this.tokens.take(), CODEC.tokens);
    await write(client, "putWorkflows", this.workflows.take(), CODEC.workflows);
    await write(client, "setMeta", this.meta.take(), CODEC.meta);
    await write(client, "putCheckpointParts", this.checkpointParts.take(), CODEC.checkpointParts);
  }
}

class Rounds<T> {
  readonly #key: (record: T) => string;
  /** Each key's rounds so far and the record of its last put. */
  #seen = new Map<string, { rounds: number; last: T }>();
  #rounds: T[][] = [];

  constructor(key: (record: T) => string) {
    this.#key = key;
  }

  add(record: T): void {
    const key = this.#key(record);
    const seen = this.#seen.get(key);
    if (seen?.last === record) return;
    const round = seen?.rounds ?? 0;
    this.#seen.set(key, { rounds: round + 1, last: record });
    this.#rounds[round] ??= [];
    this.#rounds[round].push(record);
  }

  /** The records when they are one round (none: empty), or null for more than one. */
  only(): T[] | null {
    if (this.#rounds.length > 1) return null;
    return this.#rounds[0] ?? [];
  }

  take(): T[][] {
    const rounds = this.#rounds;
    this.#seen = new Map();
    this.#rounds = [];
    return rounds;
  }
}

/** The records as one array per column, for UNNEST. */
function columnArrays<T>(records: readonly T[], codec: RowCodec<T>): RowValue[][] {
  const columns: RowValue[][] = [];
  records.forEach((record, row) => {
    const each = codec.encode(record);
    for (let column = 0; column < each.length; column++) {
      columns[column] ??= new Array(records.length);
      columns[column][row] = each[column];
    }
  });
  return columns;
}

/** Each round as column arrays, ROWS_PER_STATEMENT rows per statement, in order. */
async function write<T>(
  client: PoolClient,
  name: StatementName,
  rounds: T[][],
  codec: RowCodec<T>,
): Promise<void> {
  for (const round of rounds) {
    for (let start = 0; start < round.length; start += ROWS_PER_STATEMENT) {
      await run(client, name, columnArrays(round.slice(start, start + ROWS_PER_STATEMENT), codec));
    }
  }
}

async function termOf(client: PoolClient, name: "lockTerm" | "readTerm"): Promise<number> {
  const result = await client.query(query(name, []));
  return Number(result.rows[0][0]);
}

/**
 * Refuses an older term, makes a newer one the newest: in the commit's own transaction, holding the
 * leadership row until it ends, so no commit of another term runs between the check and the writes.
 */
async function checkTerm(client: PoolClient, term: number): Promise<void> {
  const newest = await termOf(client, "lockTerm");
  if (term < newest) throw new StaleTermError(term, newest);
  if (term > newest) await run(client, "writeTerm", [term]);
}

/**
 * The migration runner's view of PostgreSQL: one transaction under an advisory lock, so a second
 * server starting at the same moment waits, then finds the migrations applied.
 */
function migrationDialect(pool: Pool, schema: string | null): MigrationDialect {
  return {
    async exclusive(work) {
      await inTransaction(pool, "BEGIN", async (client) => {
        await client.query(
          "SELECT pg_advisory_xact_lock($1, hashtext(coalesce($2::text, current_schema()::text, '')))",
          [MIGRATION_LOCK_CLASS, schema],
        );
        // Looked up rather than CREATE SCHEMA IF NOT EXISTS, which needs the CREATE privilege even
        // when the schema is there: a schema made beforehand by an administrator is enough.
        if (schema !== null) {
          const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
          if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${escapeIdentifier(schema)}`);
        }
        await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
          version integer PRIMARY KEY,
          name text NOT NULL,
          applied_at bigint NOT NULL
        )`);
        await work({
          exec: async (sql) => {
            await client.query(sql);
          },
          appliedVersions: async () =>
            (await client.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map(
              (row) => Number(row.version),
            ),
          record: async (migration, at) => {
            await client.query(
              "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
              [migration.version, migration.name, at],
            );
          },
        });
      });
    },
  };
}
