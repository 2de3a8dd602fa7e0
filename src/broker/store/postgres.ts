// The high-availability store: PostgreSQL through pg. The same tables and the same rules as the
// SQLite store (src/broker/store/sqlite.ts); both pass test/conformance/store.test.ts.
//
// A commit is one transaction. Within it, the puts between two deletes are gathered per table and
// written as one statement per table (UNNEST of column arrays): puts to different tables commute,
// and puts to one table are upserts where the last one wins, so the result is the batch applied in
// order, in a handful of round trips instead of one per change. A commit of puts alone, with no key
// put twice in a table, is one statement and one round trip (pg-commit-statement.ts).

import { join } from "node:path";
import { escapeIdentifier, Pool, type PoolClient, type PoolConfig } from "pg";
import type {
  AccountingQuery,
  AccountingRecord,
  EventRecord,
  JobRecord,
  TaskRecord,
} from "../../common/model/records.ts";
import type { TaskState } from "../../common/model/states.ts";
import { LOAD_ALL, LOAD_LIVE, type SnapshotReads } from "./load-sql.ts";
import { MIGRATIONS_DIR, migrate, readMigrations } from "./migrate.ts";
import {
  decodeNewTaskRange,
  jobTasksWithUntouched,
  type NewTaskRange,
  taskOrUntouched,
  taskStatesWithUntouched,
  withUntouchedTasks,
} from "./new-task-ranges.ts";
import { migrationBounds, recordStoreBounds, STORE_LONG_ANSWER_MS } from "./pg-bounds.ts";
import { readAnswer } from "./pg-commit-statement.ts";
import { migrationDialect } from "./pg-migrations.ts";
import { PendingPuts } from "./pg-pending-puts.ts";
import { CODEC, query, type Row, rows, run, type StatementName, TYPES } from "./pg-statements.ts";
import { inTransaction } from "./pg-transaction.ts";
import { decodeHeader, decodeUsage } from "./recovery-sql.ts";
import {
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

/** PostgreSQL truncates longer identifiers, which would silently name another schema. */
const MAX_IDENTIFIER_BYTES = 63;

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
    const options: PoolConfig = {
      connectionString: this.#url,
      application_name: "steward",
      types: TYPES,
      // The pool awaits this before handing the connection out, and drops the connection if it fails.
      onConnect: schema === null ? undefined : (client) => setSearchPath(client, schema),
    };
    // Migrations (a schema change may take long, a second broker waits for the first's) run on a
    // connection of their own, without the bound on a statement the broker's work has (pg-bounds.ts).
    const migrator = new Pool({ ...options, ...migrationBounds(), max: 1 });
    migrator.on("error", () => {});
    try {
      await migrate(migrationDialect(migrator, schema), await readMigrations(POSTGRES_MIGRATIONS_DIR));
    } catch (error) {
      throw new Error(`cannot open the PostgreSQL store ${this.#where()}: ${(error as Error).message}`, {
        cause: error,
      });
    } finally {
      await migrator.end();
    }
    const pool = new Pool({ ...options, ...recordStoreBounds() });
    // A pooled connection that breaks while idle is dropped by the pool and reported here; without a
    // listener that would end the process. The next commit opens a new one, or fails loudly.
    pool.on("error", () => {});
    this.#pool = pool;
  }

  async load(): Promise<StoreSnapshot> {
    return this.#snapshot(LOAD_ALL);
  }

  async loadLive(): Promise<StoreSnapshot> {
    return this.#snapshot(LOAD_LIVE);
  }

  /** The records `reads` names, in one REPEATABLE READ transaction: one state even while others commit. */
  #snapshot(reads: SnapshotReads): Promise<StoreSnapshot> {
    return this.#transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => {
      // Every live record at once: longer than a commit's bound (pg-bounds.ts).
      const load = (name: StatementName) => rows(client, name, [], STORE_LONG_ANSWER_MS);
      return {
        jobs: (await load(reads.jobs)).map(CODEC.jobs.decode),
        tasks: await tasksWithUntouched(load, reads),
        attempts: (await load(reads.attempts)).map(CODEC.attempts.decode),
        ...(reads.usage === null
          ? {}
          : {
              ended: (await load(reads.endedHeaders)).map(decodeHeader),
              usage: (await load(reads.usage)).map(decodeUsage),
            }),
        hosts: (await load("loadHosts")).map(CODEC.hosts.decode),
        tokens: (await load("loadTokens")).map(CODEC.tokens.decode),
        secrets: (await load("loadSecrets")).map(CODEC.secrets.decode),
        workflows: (await load("loadWorkflows")).map(CODEC.workflows.decode),
        meta: Object.fromEntries((await load("loadMeta")).map((row) => [row[0], row[1]])),
        checkpointParts: (await load(reads.checkpointParts)).map(CODEC.checkpointParts.decode),
      };
    });
  }

  async loadJob(id: string): Promise<StoredJob | null> {
    return this.#transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", async (client) => {
      const row = (await rows(client, "job", [id]))[0];
      if (!row) return null;
      return {
        job: CODEC.jobs.decode(row),
        tasks: jobTasksWithUntouched(
          (await rows(client, "jobTasks", [id], STORE_LONG_ANSWER_MS)).map(CODEC.tasks.decode),
          await rangeOf(client, id),
        ),
        attempts: (await rows(client, "jobAttempts", [id], STORE_LONG_ANSWER_MS)).map(CODEC.attempts.decode),
        checkpointParts: (await rows(client, "jobCheckpointParts", [id], STORE_LONG_ANSWER_MS)).map(
          CODEC.checkpointParts.decode,
        ),
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
      taskStatesWithUntouched(
        await rows(client, "taskStates", [jobId], STORE_LONG_ANSWER_MS),
        await rangeOf(client, jobId),
      ),
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
            await run(client, "keepJobAccounting", [change.jobId], STORE_LONG_ANSWER_MS);
            await run(client, "deleteJob", [change.jobId], STORE_LONG_ANSWER_MS);
            break;
          case "purgeAccounting":
            await batch.flush(client);
            await run(client, "purgeAccounting", [change.endedBefore], STORE_LONG_ANSWER_MS);
            break;
          case "deleteHost":
            await batch.flush(client);
            await run(client, "deleteHost", [change.name]);
            break;
          case "deleteSecret":
            await batch.flush(client);
            await run(client, "deleteSecret", [change.owner, change.name]);
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
        ? query("accountingRows", [wanted.since, wanted.limit], STORE_LONG_ANSWER_MS)
        : query("ownerAccountingRows", [wanted.since, wanted.limit, wanted.owner], STORE_LONG_ANSWER_MS),
    );
    return result.rows.map(CODEC.accounting.decode);
  }

  async events(jobId: string): Promise<EventRecord[]> {
    const result = await this.#connected().query(query("events", [jobId], STORE_LONG_ANSWER_MS));
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
  load: (name: StatementName) => Promise<Row[]>,
  reads: Pick<SnapshotReads, "tasks" | "newTaskRanges" | "taskJobOrder">,
): Promise<TaskRecord[]> {
  const tasks = (await load(reads.tasks)).map(CODEC.tasks.decode);
  const ranges = (await load(reads.newTaskRanges)).map(decodeNewTaskRange);
  if (ranges.length === 0) return tasks;
  const order = (await load(reads.taskJobOrder)).map((row) => row[0] as string);
  return withUntouchedTasks(tasks, ranges, () => order);
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
