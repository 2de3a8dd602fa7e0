// The reads of whole tables and of events, as both databases say them, and which statements each
// snapshot reads: Store.load every record, Store.loadLive the live jobs' (recovery-sql.ts) with the
// ended ones' headers and the usage sums.

import {
  ATTEMPTS,
  CHECKPOINT_PARTS,
  columnNames,
  EVENTS,
  HOSTS,
  JOBS,
  META,
  SECRETS,
  selectColumns,
  TASKS,
  type Table,
  TOKENS,
  WORKFLOWS,
} from "./schema.ts";

function selectAll<R>(table: Table<R>): string {
  return `SELECT ${columnNames(selectColumns(table))} FROM ${table.name} ORDER BY ${table.loadOrder}`;
}

const EVENT_SELECT = `SELECT ${columnNames(selectColumns(EVENTS))} FROM events`;

/** `param(n)` is the database's n-th placeholder, 1-based. */
export function loadSql(param: (n: number) => string) {
  return {
    loadJobs: selectAll(JOBS),
    loadTasks: selectAll(TASKS),
    loadAttempts: selectAll(ATTEMPTS),
    loadHosts: selectAll(HOSTS),
    loadTokens: selectAll(TOKENS),
    loadSecrets: selectAll(SECRETS),
    loadWorkflows: selectAll(WORKFLOWS),
    loadMeta: selectAll(META),
    loadCheckpointParts: selectAll(CHECKPOINT_PARTS),
    events: `${EVENT_SELECT} WHERE job_id = ${param(1)} ORDER BY at, id`,
    eventsAfter: `${EVENT_SELECT} WHERE id > ${param(1)} ORDER BY id LIMIT ${param(2)}`,
    jobEventsAfter: `${EVENT_SELECT} WHERE job_id = ${param(1)} AND id > ${param(2)} ORDER BY id LIMIT ${param(3)}`,
  };
}

/**
 * The statements of Store.load's snapshot: every job, task (rows, ranges and the jobs' order:
 * new-task-ranges.ts), attempt and checkpoint part; no headers or usage.
 */
export const LOAD_ALL = {
  jobs: "loadJobs",
  tasks: "loadTasks",
  newTaskRanges: "loadNewTaskRanges",
  taskJobOrder: "taskJobOrder",
  attempts: "loadAttempts",
  checkpointParts: "loadCheckpointParts",
  endedHeaders: null,
  usage: null,
} as const;

/** The statements of Store.loadLive's snapshot: the live jobs whole, the ended ones' headers, the usage sums. */
export const LOAD_LIVE = {
  jobs: "liveJobs",
  tasks: "liveTasks",
  newTaskRanges: "liveNewTaskRanges",
  taskJobOrder: "liveTaskJobOrder",
  attempts: "liveAttempts",
  checkpointParts: "liveCheckpointParts",
  endedHeaders: "endedHeaders",
  usage: "usage",
} as const;

/** Which statements a snapshot reads (hosts, tokens, secrets, workflows and meta are read whole in both). */
export type SnapshotReads = typeof LOAD_ALL | typeof LOAD_LIVE;
