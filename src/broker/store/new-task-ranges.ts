// A new job's untouched tasks, stored as one row: a putNewTasks change (a large array's tasks 0 to
// count-1, each as newTask makes it in one state) writes the range into `new_tasks` and no task
// rows at all; a task's first change writes its own row, which stands for it from then on. Both
// databases read a job's tasks as its rows with the range's untouched tasks made where it has no
// row (withUntouchedTasks), so every reader sees what a row per task would have said. A million
// tasks were a million rows written before a submit could be answered (3.1 s of the writer thread
// on a 2-core machine, an ad hoc timing); now one.

import { newTask } from "../../common/model/new-records.ts";
import type { TaskRecord } from "../../common/model/records.ts";
import type { TaskState } from "../../common/model/states.ts";

/** Tasks 0 to count-1 of a job, each as newTask makes it in `state`, where the job has no row. */
export interface NewTaskRange {
  jobId: string;
  state: TaskState;
  count: number;
}

/** The statements of the ranges, as both databases say them (`param(n)`: the nth placeholder). */
export function newTaskRangeSql(param: (n: number) => string, liveIds: string) {
  const select = "SELECT job_id, state, count FROM new_tasks";
  return {
    // Tasks 0 to count-1 become new: rows of those indexes go (none, for a new job).
    clearNewTaskRows: `DELETE FROM tasks WHERE job_id = ${param(1)} AND idx < ${param(2)}`,
    putNewTaskRange:
      `INSERT INTO new_tasks (job_id, state, count) VALUES (${param(1)}, ${param(2)}, ${param(3)}) ` +
      "ON CONFLICT (job_id) DO UPDATE SET state = excluded.state, count = excluded.count",
    deleteNewTaskRange: `DELETE FROM new_tasks WHERE job_id = ${param(1)}`,
    loadNewTaskRanges: select,
    liveNewTaskRanges: `${select} WHERE job_id IN (${liveIds})`,
    jobNewTaskRange: `${select} WHERE job_id = ${param(1)}`,
    // The jobs that have tasks, in the order the database sorts their ids (the tasks' own order).
    taskJobOrder: "SELECT job_id FROM tasks UNION SELECT job_id FROM new_tasks ORDER BY job_id",
    liveTaskJobOrder:
      `SELECT job_id FROM tasks WHERE job_id IN (${liveIds}) UNION ` +
      `SELECT job_id FROM new_tasks WHERE job_id IN (${liveIds}) ORDER BY job_id`,
  };
}

/** A row of the range statements as a range. */
export function decodeNewTaskRange(row: readonly unknown[]): NewTaskRange {
  return { jobId: row[0] as string, state: row[1] as TaskState, count: Number(row[2]) };
}

/**
 * One job's tasks: its rows (by index), with the range's untouched tasks made where there is no
 * row. Rows past the range stay as they are.
 */
export function jobTasksWithUntouched(
  rows: readonly TaskRecord[],
  range: NewTaskRange | undefined,
): TaskRecord[] {
  if (!range || range.count === 0) return [...rows];
  const tasks: TaskRecord[] = [];
  let next = 0;
  for (let index = 0; index < range.count; index++) {
    if (next < rows.length && rows[next].index === index) tasks.push(rows[next++]);
    else tasks.push(newTask(range.jobId, index, range.state));
  }
  while (next < rows.length) tasks.push(rows[next++]);
  return tasks;
}

/**
 * The tasks of many jobs: `rows` ordered by job then index, the jobs in `order` (the database's
 * order of their ids, taskJobOrder). Without ranges, the rows as they are.
 */
export function withUntouchedTasks(
  rows: TaskRecord[],
  ranges: readonly NewTaskRange[],
  order: () => readonly string[],
): TaskRecord[] {
  if (ranges.length === 0) return rows;
  const rangeOf = new Map(ranges.map((range) => [range.jobId, range]));
  const rowsOf = new Map<string, TaskRecord[]>();
  for (const row of rows) {
    const list = rowsOf.get(row.jobId);
    if (list) list.push(row);
    else rowsOf.set(row.jobId, [row]);
  }
  const tasks: TaskRecord[] = [];
  for (const jobId of order())
    for (const task of jobTasksWithUntouched(rowsOf.get(jobId) ?? [], rangeOf.get(jobId))) tasks.push(task);
  return tasks;
}

/** The state of each task of a job by index: its rows' (index, state) with the range's where none. */
export function taskStatesWithUntouched(
  rows: readonly (readonly unknown[])[],
  range: NewTaskRange | undefined,
): TaskState[] {
  const last = rows.length > 0 ? Number(rows[rows.length - 1][0]) : -1;
  const states = new Array<TaskState>(Math.max(range?.count ?? 0, last + 1));
  if (range) states.fill(range.state, 0, range.count);
  for (const row of rows) states[Number(row[0])] = row[1] as TaskState;
  return states;
}

/** One task of a job: its row, else the range's untouched task of that index, else null. */
export function taskOrUntouched(
  row: TaskRecord | undefined,
  range: NewTaskRange | undefined,
  index: number,
): TaskRecord | null {
  if (row) return row;
  return range && index < range.count ? newTask(range.jobId, index, range.state) : null;
}
