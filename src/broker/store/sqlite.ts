// The embedded store: SQLite through node:sqlite (built into Node 24, no native build). WAL with
// synchronous=FULL, so a commit that returned survives kill -9 and power loss (guarantee 1).
// Two connections: this one reads (synchronously, in the caller's thread; WAL lets it read while a
// write is under way), and one in a writer thread does every write (sqlite-writer.ts), so that a
// commit's fsync does not hold up the server's event loop.

import { backup, DatabaseSync } from "node:sqlite";
import type {
  AccountingQuery,
  AccountingRecord,
  EventRecord,
  JobRecord,
} from "../../common/model/records.ts";
import type { TaskState } from "../../common/model/states.ts";
import { LOAD_ALL, LOAD_LIVE, type SnapshotReads } from "./load-sql.ts";
import { type MigrationDialect, migrate, readMigrations } from "./migrate.ts";
import {
  decodeNewTaskRange,
  jobTasksWithUntouched,
  type NewTaskRange,
  taskOrUntouched,
  taskStatesWithUntouched,
  withUntouchedTasks,
} from "./new-task-ranges.ts";
import { decodeHeader, decodeUsage } from "./recovery-sql.ts";
import type { RowCodec } from "./schema.ts";
import {
  CODEC,
  openConnection,
  type Row,
  SQLITE_MIGRATIONS_DIR,
  type StatementName,
  Statements,
} from "./sqlite-statements.ts";
import {
  type SqliteWriter,
  SqliteWriterHere,
  SqliteWriterThread,
  type WriteRequest,
} from "./sqlite-writer.ts";
import { storageFullOf } from "./storage-full.ts";
import type { Change, Store, StoredJob, StoredTask, StoreSnapshot } from "./store.ts";

/** ":memory:", or a URI naming an in-memory database. */
const IN_MEMORY = /^:memory:$|^file::memory:|[?&]mode=memory(&|$)/;

export class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  readonly path: string;
  #db: DatabaseSync | null = null;
  #statements: Statements | null = null;
  #writer: SqliteWriter | null = null;

  constructor(path: string) {
    this.path = path;
  }

  async open(): Promise<void> {
    if (this.#db) return;
    const db = openConnection(this.path);
    try {
      await migrate(migrationDialect(db), await readMigrations(SQLITE_MIGRATIONS_DIR));
    } catch (error) {
      db.close();
      throw error;
    }
    this.#db = db;
    this.#statements = new Statements(db);
    // After the migrations: the writer's connection finds the tables made. An in-memory database
    // is seen by its own connection only: its writes stay here.
    this.#writer = IN_MEMORY.test(this.path) ? new SqliteWriterHere(db) : new SqliteWriterThread(this.path);
  }

  /**
   * A consistent copy of the database in a new file at `target`, taken while the server runs: SQLite's
   * online backup, in one step (one read transaction, so one state even while the writer commits;
   * in steps, a commit between them would start the copy over), off the event loop. Its own
   * read-only connection, so the reads of the server do not wait behind it.
   */
  async backupTo(target: string): Promise<void> {
    if (IN_MEMORY.test(this.path)) throw new Error("an in-memory store cannot be backed up");
    const source = new DatabaseSync(this.path, { readOnly: true, timeout: 5000 });
    try {
      await backup(source, target, { rate: 2 ** 31 - 1 });
    } finally {
      source.close();
    }
  }

  async load(): Promise<StoreSnapshot> {
    return this.#snapshot(LOAD_ALL);
  }

  async loadLive(): Promise<StoreSnapshot> {
    return this.#snapshot(LOAD_LIVE);
  }

  async loadJob(id: string): Promise<StoredJob | null> {
    const db = this.#database();
    db.exec("BEGIN");
    try {
      const row = this.#rows("job", id)[0];
      if (!row) return null;
      return {
        job: CODEC.jobs.decode(row),
        tasks: jobTasksWithUntouched(this.#rows("jobTasks", id).map(CODEC.tasks.decode), this.#range(id)),
        attempts: this.#rows("jobAttempts", id).map(CODEC.attempts.decode),
        checkpointParts: this.#rows("jobCheckpointParts", id).map(CODEC.checkpointParts.decode),
      };
    } finally {
      db.exec("COMMIT");
    }
  }

  async loadJobRecord(id: string): Promise<JobRecord | null> {
    this.#database();
    const row = this.#rows("job", id)[0];
    return row ? CODEC.jobs.decode(row) : null;
  }

  async loadTask(jobId: string, index: number): Promise<StoredTask | null> {
    const db = this.#database();
    db.exec("BEGIN");
    try {
      const row = this.#rows("task", jobId, index)[0];
      const task = taskOrUntouched(
        row && CODEC.tasks.decode(row),
        row ? undefined : this.#range(jobId),
        index,
      );
      if (!task) return null;
      return { task, attempts: this.#rows("taskAttempts", jobId, index).map(CODEC.attempts.decode) };
    } finally {
      db.exec("COMMIT");
    }
  }

  async loadTaskStates(jobId: string): Promise<TaskState[]> {
    const db = this.#database();
    db.exec("BEGIN");
    try {
      return taskStatesWithUntouched(this.#rows("taskStates", jobId), this.#range(jobId));
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
    return this.#write<number>({ op: "beginTerm" });
  }

  async currentTerm(): Promise<number> {
    this.#database();
    return this.#term();
  }

  async commit(term: number, changes: readonly Change[]): Promise<void> {
    const eventIds = await this.#write<number[]>({
      op: "commit",
      term,
      changes: JSON.stringify(changes),
    });
    // Only a committed event gets its id.
    let next = 0;
    for (const change of changes) if (change.op === "addEvent") change.event.id = eventIds[next++];
  }

  async reserveIds(term: number, sequence: string, count: number): Promise<number> {
    return this.#write<number>({ op: "reserveIds", term, sequence, count });
  }

  async accounting(query: AccountingQuery): Promise<AccountingRecord[]> {
    this.#database();
    const rows =
      query.owner === undefined
        ? this.#rows("accountingRows", query.since, query.limit)
        : this.#rows("ownerAccountingRows", query.since, query.limit, query.owner);
    return rows.map(CODEC.accounting.decode);
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
    const writer = this.#writer;
    this.#db = null;
    this.#statements = null;
    this.#writer = null;
    await writer?.close();
    db.close();
  }

  /**
   * A write through the writer's connection; one refused for a full disk (SQLITE_FULL: its
   * transaction rolled back, the database as before) is a StorageFullError naming the file.
   */
  async #write<T>(request: WriteRequest): Promise<T> {
    try {
      return await this.#writes().request<T>(request);
    } catch (error) {
      throw storageFullOf(error, this.path) ?? error;
    }
  }

  #writes(): SqliteWriter {
    if (!this.#writer) throw new Error(`SQLite store ${this.path} is not open`);
    return this.#writer;
  }

  #term(): number {
    const row = this.#statement("readTerm").get() as unknown as Row;
    return Number(row[0]);
  }

  #database(): DatabaseSync {
    if (!this.#db) throw new Error(`SQLite store ${this.path} is not open`);
    return this.#db;
  }

  #statement(name: StatementName) {
    this.#database();
    return (this.#statements as Statements).get(name);
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

  /** The records `reads` names, in one read transaction: one state even while another connection commits. */
  #snapshot(reads: SnapshotReads): StoreSnapshot {
    const db = this.#database();
    db.exec("BEGIN");
    try {
      return {
        jobs: this.#decoded(reads.jobs, CODEC.jobs),
        tasks: withUntouchedTasks(
          this.#decoded(reads.tasks, CODEC.tasks),
          this.#rows(reads.newTaskRanges).map(decodeNewTaskRange),
          () => this.#rows(reads.taskJobOrder).map((row) => row[0] as string),
        ),
        attempts: this.#decoded(reads.attempts, CODEC.attempts),
        ...(reads.usage === null
          ? {}
          : {
              ended: this.#rows(reads.endedHeaders).map(decodeHeader),
              usage: this.#rows(reads.usage).map(decodeUsage),
            }),
        hosts: this.#decoded("loadHosts", CODEC.hosts),
        tokens: this.#decoded("loadTokens", CODEC.tokens),
        secrets: this.#decoded("loadSecrets", CODEC.secrets),
        workflows: this.#decoded("loadWorkflows", CODEC.workflows),
        meta: Object.fromEntries(this.#rows("loadMeta").map((row) => [row[0] as string, row[1] as string])),
        checkpointParts: this.#decoded(reads.checkpointParts, CODEC.checkpointParts),
      };
    } finally {
      db.exec("COMMIT");
    }
  }

  /** A job's range of untouched tasks (new-task-ranges.ts), if it has one. */
  #range(jobId: string): NewTaskRange | undefined {
    const row = this.#rows("jobNewTaskRange", jobId)[0];
    return row ? decodeNewTaskRange(row) : undefined;
  }

  #rows(name: StatementName, ...values: (string | number)[]): Row[] {
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
