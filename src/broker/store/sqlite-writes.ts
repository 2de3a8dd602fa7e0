// Every write of the SQLite store, on the one connection that writes: each in one transaction
// (BEGIN IMMEDIATE takes the write lock first), with the term checked inside it. Synchronous: it
// runs in the store's writer thread (sqlite-writer.ts), so that the fsync of a commit does not
// hold up the server's event loop.

import type { DatabaseSync } from "node:sqlite";
import type { AttemptRecord, TaskRecord } from "../../common/model/records.ts";
import {
  CODEC,
  ROW_PARAMETERS,
  ROW_STATEMENTS,
  ROWS_PER_STATEMENT,
  type Row,
  type SqlValue,
  Statements,
} from "./sqlite-statements.ts";
import { type Change, StaleTermError } from "./store.ts";

export class SqliteWrites {
  readonly #db: DatabaseSync;
  readonly #statements: Statements;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#statements = new Statements(db);
  }

  /** The newest term plus one, recorded as the newest. */
  beginTerm(): number {
    return this.#write(() => {
      const term = this.#term() + 1;
      this.#statements.run("writeTerm", term);
      return term;
    });
  }

  /**
   * Applies the changes in one transaction; returns the ids of the events added, in their order.
   * Task and attempt rows are written many to a statement: the puts gather until the end, or until
   * a change that deletes or reads such rows (a job's removal, a new job's range), and go first.
   */
  commit(term: number, changes: readonly Change[]): number[] {
    return this.#write(() => {
      this.#checkTerm(term);
      const eventIds: number[] = [];
      const tasks: TaskRecord[] = [];
      const attempts: AttemptRecord[] = [];
      const writeGathered = () => {
        this.#putRows("tasks", tasks);
        this.#putRows("attempts", attempts);
        tasks.length = 0;
        attempts.length = 0;
      };
      for (const change of changes) {
        if (change.op === "putTasks") for (const task of change.tasks) tasks.push(task);
        else if (change.op === "putAttempt") attempts.push(change.attempt);
        else {
          if (change.op === "deleteJob" || change.op === "putNewTasks") writeGathered();
          this.#apply(change, eventIds);
        }
      }
      writeGathered();
      return eventIds;
    });
  }

  reserveIds(term: number, sequence: string, count: number): number {
    if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`cannot reserve ${count} ids`);
    return this.#write(() => {
      this.#checkTerm(term);
      const row = this.#statements.get("readSequence").get(sequence) as unknown as Row | undefined;
      const first = row ? Number(row[0]) : 1;
      this.#statements.run("writeSequence", sequence, first + count);
      return first;
    });
  }

  close(): void {
    this.#statements.clear();
    this.#db.close();
  }

  #write<T>(work: () => T): T {
    const db = this.#db;
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
    const row = this.#statements.get("readTerm").get() as unknown as Row;
    return Number(row[0]);
  }

  /** Refuses an older term; makes a newer one the newest. Inside the write's transaction. */
  #checkTerm(term: number): void {
    const newest = this.#term();
    if (term < newest) throw new StaleTermError(term, newest);
    if (term > newest) this.#statements.run("writeTerm", term);
  }

  /** A change other than a put of tasks or attempts (commit gathers those). */
  #apply(change: Exclude<Change, { op: "putTasks" | "putAttempt" }>, eventIds: number[]): void {
    const statements = this.#statements;
    switch (change.op) {
      case "putJob":
        statements.run("putJob", ...(CODEC.jobs.encode(change.job) as SqlValue[]));
        return;
      case "putNewTasks":
        statements.run("clearNewTaskRows", change.jobId, change.count);
        statements.run("putNewTaskRange", change.jobId, change.state, change.count);
        return;
      case "addEvent": {
        const row = statements
          .get("addEvent")
          .get(...(CODEC.events.encode(change.event) as SqlValue[])) as unknown as Row;
        eventIds.push(Number(row[0]));
        return;
      }
      case "putHost":
        statements.run("putHost", ...(CODEC.hosts.encode(change.host) as SqlValue[]));
        return;
      case "deleteHost":
        statements.run("deleteHost", change.name);
        return;
      case "putToken":
        statements.run("putToken", ...(CODEC.tokens.encode(change.token) as SqlValue[]));
        break;
      case "putSecret":
        statements.run("putSecret", ...(CODEC.secrets.encode(change.secret) as SqlValue[]));
        break;
      case "deleteSecret":
        statements.run("deleteSecret", change.owner, change.name);
        return;
      case "putWorkflow":
        statements.run("putWorkflow", ...(CODEC.workflows.encode(change.workflow) as SqlValue[]));
        return;
      case "putCheckpointPart":
        statements.run("putCheckpointPart", ...(CODEC.checkpointParts.encode(change.part) as SqlValue[]));
        return;
      case "deleteCheckpointPart":
        statements.run(
          "deleteCheckpointPart",
          change.jobId,
          change.taskIndex,
          change.rank,
          change.generation,
        );
        return;
      case "deleteJob":
        statements.run("keepJobAccounting", change.jobId);
        statements.run("deleteJobCheckpointParts", change.jobId);
        statements.run("deleteJobAttempts", change.jobId);
        statements.run("deleteJobTasks", change.jobId);
        statements.run("deleteNewTaskRange", change.jobId);
        statements.run("deleteJobEvents", change.jobId);
        statements.run("deleteJob", change.jobId);
        return;
      case "setMeta":
        statements.run("setMeta", change.key, change.value);
        return;
      case "purgeAccounting":
        statements.run("purgeAccounting", change.endedBefore);
        return;
      default: {
        const unknown: never = change;
        throw new Error(`unknown change: ${JSON.stringify(unknown)}`);
      }
    }
  }

  /** Upserts task or attempt rows, ROWS_PER_STATEMENT to a statement, then the rest one by one. */
  #putRows<T extends "tasks" | "attempts">(
    table: T,
    records: readonly (T extends "tasks" ? TaskRecord : AttemptRecord)[],
  ): void {
    // Rows of one statement are applied in order, so a record named twice still ends as its last put.
    const { encode } = CODEC[table] as { encode(record: (typeof records)[number]): readonly unknown[] };
    const statement = ROW_STATEMENTS[table];
    const parameters = ROW_PARAMETERS[table];
    let start = 0;
    if (records.length >= ROWS_PER_STATEMENT) {
      const values: SqlValue[] = new Array(ROWS_PER_STATEMENT * parameters);
      const chunk = this.#statements.get(statement.chunk);
      for (; start + ROWS_PER_STATEMENT <= records.length; start += ROWS_PER_STATEMENT) {
        for (let i = 0; i < ROWS_PER_STATEMENT; i++) {
          const row = encode(records[start + i]) as SqlValue[];
          for (let column = 0; column < parameters; column++) values[i * parameters + column] = row[column];
        }
        chunk.run(...values);
      }
    }
    const one = this.#statements.get(statement.one);
    for (; start < records.length; start++) one.run(...(encode(records[start]) as SqlValue[]));
  }
}
