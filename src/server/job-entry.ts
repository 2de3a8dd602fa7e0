// The server's in-memory copy of one job: its records plus the indexes the scheduler needs.
// The store holds the same records; this copy is rebuilt from it at start.

import { type CompiledExpression, compileExpression } from "../model/cel.ts";
import { countBucket, emptyCounts, type TaskCounts } from "../model/job-state.ts";
import type { AttemptRecord, JobRecord, TaskRecord } from "../model/records.ts";
import type { TaskState } from "../model/states.ts";
import type { JobView } from "../scheduler/view.ts";

export class JobEntry implements JobView {
  readonly record: JobRecord;
  readonly seq: number;
  readonly tasks: TaskRecord[];
  /** Attempts per task index, oldest first. */
  readonly attempts = new Map<number, AttemptRecord[]>();
  readonly counts: TaskCounts = emptyCounts();
  /** Pending task indexes, in the order they should start. */
  readonly pending = new Set<number>();
  /** The last progress each running task reported (fraction 0..1, when), from heartbeats. */
  readonly progress = new Map<number, { fraction: number; at: number }>();
  /** Where a migrated task may go next: to a named host, or anywhere but the one it left. */
  readonly migrations = new Map<number, { to: string | null; from: string }>();
  readonly requirements: CompiledExpression | null;
  readonly rank: CompiledExpression | null;

  constructor(record: JobRecord, seq: number, tasks: TaskRecord[]) {
    this.record = record;
    this.seq = seq;
    this.tasks = tasks;
    this.requirements = record.spec.requirements ? compileExpression(record.spec.requirements) : null;
    this.rank = record.spec.rank ? compileExpression(record.spec.rank) : null;
    for (const task of tasks) {
      this.counts[countBucket(task.state)]++;
      if (task.state === "pending") this.pending.add(task.index);
    }
  }

  get id(): string {
    return this.record.id;
  }
  get priority(): number {
    return this.record.priority;
  }
  get createdAt(): number {
    return this.record.createdAt;
  }
  get cpus(): number {
    return this.record.spec.resources.cpus;
  }
  get memoryMb(): number {
    return this.record.spec.resources.memoryMb;
  }

  *readyTasks(now: number): Iterable<number> {
    for (const index of this.pending) {
      const notBefore = this.tasks[index].notBefore;
      if (notBefore === null || notBefore <= now) yield index;
    }
  }

  allowsHost(taskIndex: number, host: string): boolean {
    const rule = this.migrations.get(taskIndex);
    if (!rule) return true;
    return rule.to ? host === rule.to : host !== rule.from;
  }

  /** Moves a task to a new state, keeping the counts and the pending set right. */
  setTaskState(task: TaskRecord, state: TaskState): void {
    if (task.state === state) return;
    this.counts[countBucket(task.state)]--;
    this.counts[countBucket(state)]++;
    if (task.state === "pending") this.pending.delete(task.index);
    if (state === "pending") this.pending.add(task.index);
    task.state = state;
  }

  addAttempt(attempt: AttemptRecord): void {
    const list = this.attempts.get(attempt.taskIndex);
    if (list) list.push(attempt);
    else this.attempts.set(attempt.taskIndex, [attempt]);
  }

  attempt(taskIndex: number, number: number): AttemptRecord | undefined {
    return this.attempts.get(taskIndex)?.find((attempt) => attempt.number === number);
  }

  latestAttempt(taskIndex: number): AttemptRecord | undefined {
    const list = this.attempts.get(taskIndex);
    return list?.[list.length - 1];
  }

  isEnded(): boolean {
    const { succeeded, failed, cancelled } = this.counts;
    return succeeded + failed + cancelled === this.tasks.length;
  }
}
