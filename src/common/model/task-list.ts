// A list of an array's task indexes as users write it (`retry --tasks`, `cancel --tasks`):
// `3,7-9` is tasks 3, 7, 8 and 9. Parsed here once, for the CLI and the API; written back the same
// way, shortest form, for messages ("tasks 3, 7-9").

/** The most indexes one list may name (an array's largest count): a typo like `0-99999999` is refused. */
export const MAX_TASK_LIST_INDEXES = 1_000_000;

/** A list that cannot be read: the message names the part at fault. */
export class TaskListError extends Error {}

const PART = /^(\d+)(?:-(\d+))?$/;

/**
 * The indexes of a list (`3,7-9`), each once, ascending. Spaces around parts are allowed; an empty
 * list, an empty part, a part that is not a number or a range, and a range that runs backwards are
 * refused, naming the part. `max`: the most indexes the list may name.
 */
export function parseTaskList(text: string, max: number = MAX_TASK_LIST_INDEXES): number[] {
  const parts = text.split(",").map((part) => part.trim());
  if (text.trim() === "") throw new TaskListError("the list of tasks is empty (write it as 3,7-9)");
  const indexes = new Set<number>();
  for (const part of parts) {
    const match = PART.exec(part);
    if (!match)
      throw new TaskListError(`${JSON.stringify(part)} is not a task index or a range (write 3,7-9)`);
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last))
      throw new TaskListError(`${JSON.stringify(part)} is too large`);
    if (last < first)
      throw new TaskListError(`${JSON.stringify(part)} runs backwards (write ${last}-${first})`);
    if (last - first + 1 + indexes.size > max)
      throw new TaskListError(`the list names more than ${max} tasks`);
    for (let index = first; index <= last; index++) indexes.add(index);
  }
  return [...indexes].sort((a, b) => a - b);
}

/** Indexes written back as a list, runs of three or more as ranges: [3, 7, 8, 9] -> "3, 7-9". */
export function formatTaskList(indexes: readonly number[]): string {
  const sorted = [...new Set(indexes)].sort((a, b) => a - b);
  const parts: string[] = [];
  let start = 0;
  while (start < sorted.length) {
    let end = start;
    while (end + 1 < sorted.length && sorted[end + 1] === sorted[end] + 1) end++;
    if (end - start >= 2) parts.push(`${sorted[start]}-${sorted[end]}`);
    else for (let i = start; i <= end; i++) parts.push(String(sorted[i]));
    start = end + 1;
  }
  return parts.join(", ");
}
