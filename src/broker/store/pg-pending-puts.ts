// The puts of a PostgreSQL commit gathered per table, written as one UNNEST statement per table and
// round (a key put twice goes to a later round), or, when every table has one round, as the whole
// commit in one statement (pg-commit-statement.ts).

import type { PoolClient } from "pg";
import type {
  AttemptRecord,
  CheckpointPart,
  EventRecord,
  HostRecord,
  JobRecord,
  SecretRecord,
  TaskRecord,
  TokenRecord,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { TaskState } from "../../common/model/states.ts";
import { type BoundedQuery, writeAnswerMs } from "./pg-bounds.ts";
import { commitStatement, type PutRows } from "./pg-commit-statement.ts";
import { CODEC, query, run, type StatementName } from "./pg-statements.ts";
import {
  ATTEMPTS,
  CHECKPOINT_PARTS,
  EVENTS,
  HOSTS,
  JOBS,
  META,
  type MetaEntry,
  type RowCodec,
  type RowValue,
  SECRETS,
  TASKS,
  TOKENS,
  WORKFLOWS,
} from "./schema.ts";
import type { Change } from "./store.ts";

/** Rows per UNNEST statement: bounds the size of one message; 100,000 tasks are still 10 round trips. */
export const ROWS_PER_STATEMENT = 10_000;

export type Put = Exclude<
  Change,
  {
    op:
      | "deleteJob"
      | "deleteHost"
      | "deleteSecret"
      | "deleteCheckpointPart"
      | "purgeAccounting"
      | "putNewTasks";
  }
>;

/**
 * The puts of a batch since its last delete, per table. Rows that name a key already seen go into
 * a later round, because one INSERT ... ON CONFLICT may not touch a row twice: round n holds the
 * n-th put of each key, so the rounds, applied in order, leave the last put of every key, and
 * every put is still checked by the schema as it would be one by one. A put of the very record
 * that was the key's last put is left out: rows are encoded as they are written, so it would write
 * the same row again.
 */
export class PendingPuts {
  jobs = new Rounds<JobRecord>((job) => job.id);
  tasks = new Rounds<TaskRecord>((task) => `${task.jobId}\0${task.index}`);
  attempts = new Rounds<AttemptRecord>((a) => `${a.jobId}\0${a.taskIndex}\0${a.number}`);
  hosts = new Rounds<HostRecord>((host) => host.name);
  tokens = new Rounds<TokenRecord>((token) => token.id);
  secrets = new Rounds<SecretRecord>((secret) => `${secret.owner}\0${secret.name}`);
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
        change.op === "deleteSecret" ||
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
  oneStatement(term: number): BoundedQuery | null {
    const puts: PutRows[] = [];
    const tables = [
      [JOBS, this.jobs, CODEC.jobs],
      [TASKS, this.tasks, CODEC.tasks],
      [ATTEMPTS, this.attempts, CODEC.attempts],
      [HOSTS, this.hosts, CODEC.hosts],
      [TOKENS, this.tokens, CODEC.tokens],
      [SECRETS, this.secrets, CODEC.secrets],
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
    const written = rows.reduce((sum, each) => sum + (each?.length ?? 0), 0) + this.events.length;
    return { ...commitStatement(term, puts, events, ranges), query_timeout: writeAnswerMs(written) };
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
      case "putSecret":
        this.secrets.add(change.secret);
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
      const result = await client.query(
        query("addEvents", columnArrays(chunk, CODEC.events), writeAnswerMs(chunk.length)),
      );
      // Ids are given in insert order; RETURNING's order is not promised, so they are sorted.
      const ids = result.rows.map((row) => Number(row[0])).sort((a, b) => a - b);
      chunk.forEach((event, i) => {
        this.added.push([event, ids[i]]);
      });
    }
    await write(client, "putHosts", this.hosts.take(), CODEC.hosts);
    await write(client, "putTokens", this.tokens.take(), CODEC.tokens);
    await write(client, "putSecrets", this.secrets.take(), CODEC.secrets);
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
      const slice = round.slice(start, start + ROWS_PER_STATEMENT);
      await run(client, name, columnArrays(slice, codec), writeAnswerMs(slice.length));
    }
  }
}
