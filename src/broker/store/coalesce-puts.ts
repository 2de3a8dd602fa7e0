// A batch of changes often puts one record more than once: an attempt started and ended in the same
// commit (its agent's two reports applied together), a task changed by two steps that share a
// commit. A change holds the in-memory record itself (reactor/writes.ts), not a copy, and the store
// reads the record when it commits: every put of one record in a batch writes the same values. So
// all but the last are dropped here, before the batch goes to the store (fewer rows to send to the
// writer thread, to encode and to write). The last put keeps its place, so a change between the
// two that deletes rows (a new job's range clearing its task rows) is still followed by the put.
// The one change that reads rows inside the commit, a job's removal (its ended attempts are copied
// into accounting), is a barrier: a put before it is never dropped for a put after it.

import type { TaskRecord } from "../../common/model/records.ts";
import type { Change } from "./store.ts";

/** The record a put writes (compared by identity), or null for a change that is not a put of one record. */
function putRecord(change: Change): object | null {
  switch (change.op) {
    case "putJob":
      return change.job;
    case "putAttempt":
      return change.attempt;
    case "putHost":
      return change.host;
    case "putToken":
      return change.token;
    case "putSecret":
      return change.secret;
    case "putWorkflow":
      return change.workflow;
    case "putCheckpointPart":
      return change.part;
    default:
      return null;
  }
}

/**
 * The changes with every put of a record dropped where a later put of the same record follows
 * before the next `deleteJob`. Returns `changes` itself when nothing is dropped.
 */
export function coalescePuts(changes: readonly Change[]): readonly Change[] {
  const written = new Set<object>();
  let kept: Change[] | null = null;
  for (let i = changes.length - 1; i >= 0; i--) {
    const change = changes[i];
    let keep: Change | null = change;
    if (change.op === "deleteJob") written.clear();
    else if (change.op === "putTasks") keep = lastPutsOfTasks(change.tasks, written, change);
    else {
      const record = putRecord(change);
      if (record !== null) {
        if (written.has(record)) keep = null;
        else written.add(record);
      }
    }
    if (keep !== change && kept === null) kept = changes.slice(i + 1).reverse();
    if (kept !== null && keep !== null) kept.push(keep);
  }
  return kept === null ? changes : kept.reverse();
}

/** `change` when none of its tasks is written later, else a putTasks of those that are not (null: none). */
function lastPutsOfTasks(tasks: readonly TaskRecord[], written: Set<object>, change: Change): Change | null {
  let kept: TaskRecord[] | null = null;
  for (let i = tasks.length - 1; i >= 0; i--) {
    const task = tasks[i];
    const later = written.has(task);
    if (!later) written.add(task);
    if (later && kept === null) kept = tasks.slice(i + 1).reverse();
    else if (!later && kept !== null) kept.push(task);
  }
  if (kept === null) return change;
  return kept.length === 0 ? null : { op: "putTasks", tasks: kept.reverse() };
}
