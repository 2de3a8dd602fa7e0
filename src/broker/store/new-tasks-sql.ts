// The statement of a putNewTasks change, as both databases say it: rows 0 to count-1 of a new
// job's tasks made by the database from a series, each as newTask makes it (common/model/
// new-records.ts), an upsert like putTasks'. A column the schema gains must get its value here.

import { columnNames, TASKS } from "./schema.ts";

export interface NewTasksDialect {
  /** Placeholders of the job id, the state and the count. */
  jobId: string;
  state: string;
  count: string;
  /** A FROM clause of the indices 0 to count-1, as the column `i`. */
  series: string;
  /** What SQLite needs between an INSERT's SELECT and its ON CONFLICT (`WHERE true`), or nothing. */
  beforeConflict: string;
}

/** What a new task's column holds: the job, the index, the state, zero counts and no more. */
function newTaskValue(column: string, dialect: NewTasksDialect): string {
  switch (column) {
    case "job_id":
      return dialect.jobId;
    case "idx":
      return "i";
    case "state":
      return dialect.state;
    case "attempts":
    case "failures":
    case "losses":
    case "system_failures":
      return "0";
    case "not_before":
    case "result_attempt":
    case "checkpoint":
    case "migration":
    case "memory_mb":
      return "NULL";
    default:
      throw new Error(`tasks.${column} has no value for a new task (new-tasks-sql.ts)`);
  }
}

export function newTasksSql(dialect: NewTasksDialect): string {
  const values = TASKS.columns.map((column) => newTaskValue(column.name, dialect)).join(", ");
  const updates = TASKS.columns
    .filter((column) => !TASKS.key.includes(column.name))
    .map((column) => `${column.name} = excluded.${column.name}`)
    .join(", ");
  return (
    `INSERT INTO tasks (${columnNames(TASKS.columns)}) SELECT ${values} FROM ${dialect.series} ` +
    `${dialect.beforeConflict}ON CONFLICT (${TASKS.key.join(", ")}) DO UPDATE SET ${updates}`
  );
}
