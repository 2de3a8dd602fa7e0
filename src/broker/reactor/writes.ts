// The one way handlers change durable state: each method changes the in-memory state (records and
// their indexes) and adds the store change that says the same, together, so memory and store never
// go apart by a change made and not recorded (or recorded and not made). Handlers read the state
// freely but write its records only through here. Not durable, and so changed directly: what the
// agents report from moment to moment (state/soft-state.ts), and the reactor's own bookkeeping of
// the moment (room kept by preemptions, when a task last moved, contract watches, a gang's ranks,
// checkpoint objects not yet committed), which a restart starts afresh.
//
// All or nothing: each method also notes how to take back what it did to memory (the undo log), and
// when the handler throws, `handle` (step.ts) rolls the log back, newest first, before the error goes
// on: the step's changes are dropped uncommitted and memory is as the store has it, so a handler that
// throws half-way has changed nothing durable. Bookkeeping of the moment that later steps decide by
// (a gang's ranks started, room kept for a task, checkpoint objects pending, an attempt's watch) is
// taken back the same way (Step.onRollback). A part of a handler may be made all or nothing on its
// own (Step.allOrNothing: one report of several a host sent together), back to a mark in the log.
// The log costs a closure a write; it is kept until the step's commit is done, and rolled back
// then if the commit failed (reactor.ts: with every step handled after it, newest first).
// Tests: test/unit/broker/reactor/handlers/state-round-trip.test.ts recovers the state from the changes and compares, after
// every event and after each event made to throw at each of its writes in turn.

import type { AttemptUsage } from "../../common/model/attempt-usage.ts";
import { isNewTask } from "../../common/model/new-records.ts";
import type {
  AttemptRecord,
  CheckpointInfo,
  CheckpointPart,
  HostRecord,
  JobRecord,
  MigrationIntent,
  SecretRecord,
  StopIntent,
  TaskRecord,
  TokenRecord,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { AttemptOutcome, HostState, TaskState } from "../../common/model/states.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import { type HostEntry, hostRecordNow, type LiveAttempt, newHostEntry } from "../state/host-entry.ts";
import { JobEntry } from "../state/job-entry.ts";
import type { Change, StoredJob } from "../store/store.ts";

/** What a step may change of a job's record (the rest is fixed at submit). */

/** From this many tasks, a new job's tasks are stored as one putNewTasks change when they allow. */
export const NEW_TASKS_AS_ONE_CHANGE_MIN = 256;

/** A new job's tasks as one change: putNewTasks when they are all new alike and many, else putTasks. */
export function newTasksChange(jobId: string, tasks: TaskRecord[]): Change {
  const state = tasks[0]?.state;
  if (
    state !== undefined &&
    tasks.length >= NEW_TASKS_AS_ONE_CHANGE_MIN &&
    tasks.every((task, index) => isNewTask(task, jobId, index, state))
  )
    return { op: "putNewTasks", jobId, count: tasks.length, state };
  return { op: "putTasks", tasks };
}

export type JobChange = Partial<
  Pick<JobRecord, "state" | "endedAt" | "held" | "cancelRequested" | "slowHosts">
>;

/** What a step may change of a task: its counters and fields, its migration rule, its state. */
export type TaskChange = Partial<
  Pick<
    TaskRecord,
    | "attempts"
    | "failures"
    | "losses"
    | "systemFailures"
    | "notBefore"
    | "resultAttempt"
    | "checkpoint"
    | "memoryMb"
  >
> & {
  /** Where the task's next attempt may go (null: anywhere again). */
  migration?: MigrationIntent | null;
  /** The task's new state (the queue and back-off indexes follow). */
  state?: TaskState;
};

/** How an attempt ends. */
export interface AttemptEndRecord {
  outcome: AttemptOutcome;
  exitCode: number | null;
  reason: string | null;
  /** What it used, as its agent measured it (absent when no agent said: a lost host, an old agent). */
  usage?: AttemptUsage | null;
}

export class StateWrites {
  readonly #state: ClusterState;
  readonly #now: number;
  readonly #changes: Change[];
  /** How to take back each write's change to memory, oldest first (rollback runs it newest first). */
  readonly #undo: (() => void)[] = [];

  constructor(state: ClusterState, now: number, changes: Change[]) {
    this.#state = state;
    this.#now = now;
    this.#changes = changes;
  }

  /** Notes how to take back a change to memory made in this step (the handler's own bookkeeping). */
  onRollback(undo: () => void): void {
    this.#undo.push(undo);
  }

  /** Where the undo log is now: rollback(mark) takes back what was written since. */
  mark(): number {
    return this.#undo.length;
  }

  /** Takes back every change made to memory in this step since `mark` (all: 0), newest first. */
  rollback(mark = 0): void {
    const undo = this.#undo;
    for (let i = undo.length - 1; i >= mark; i--) undo[i]();
    undo.length = mark;
  }

  // ---- jobs

  /** A new job with its tasks. */
  addJob(job: JobEntry): void {
    this.#state.addJob(job);
    this.#undo.push(() => this.#state.removeJob(job));
    this.#changes.push({ op: "putJob", job: job.record });
    this.#changes.push(newTasksChange(job.record.id, job.tasks));
  }

  updateJob(job: JobEntry, change: JobChange): void {
    const record = job.record;
    const before = valuesOf(record, change);
    Object.assign(record, change);
    this.#undo.push(() => Object.assign(record, before));
    this.#changes.push({ op: "putJob", job: record });
  }

  /** Requirements the running job wrote (already checked): they replace the job's own from now on. */
  setDynamicRequirements(job: JobEntry, source: string): void {
    const { dynamicRequirements } = job.record;
    const { requirements } = job;
    this.#undo.push(() => {
      job.record.dynamicRequirements = dynamicRequirements;
      job.requirements = requirements;
    });
    job.setDynamicRequirements(source);
    this.#changes.push({ op: "putJob", job: job.record });
  }

  /**
   * A new job file for a job not yet running (an update, already checked), with its priority; the
   * job moves to its new place in the queue. `dynamicRequirements`: what the job wrote for itself
   * that still holds (null once the update replaced the requirements).
   */
  replaceJobSpec(job: JobEntry, spec: JobRecord["spec"], dynamicRequirements: string | null): void {
    const record = job.record;
    const before = {
      spec: record.spec,
      priority: record.priority,
      dynamicRequirements: record.dynamicRequirements,
      requirements: job.requirements,
      rank: job.rank,
      qosPriority: job.qosPriority,
    };
    this.#undo.push(() => {
      record.spec = before.spec;
      record.priority = before.priority;
      record.dynamicRequirements = before.dynamicRequirements;
      job.requirements = before.requirements;
      job.rank = before.rank;
      job.qosPriority = before.qosPriority;
      this.#state.queue.reorder(job);
    });
    job.replaceSpec(spec, dynamicRequirements);
    // A new QoS tier moves the job to that tier's band.
    job.qosPriority = this.#state.qosPriorityOf(job.qos);
    this.#state.queue.reorder(job);
    this.#changes.push({ op: "putJob", job: job.record });
  }

  /**
   * Brings an ended job that left memory back into it, from what the store holds (a retry): its
   * header goes, its entry comes back with its tasks, attempts and checkpoint parts. Nothing is
   * recorded here: the store holds these records already; what the retry changes is recorded next.
   */
  reviveJob(stored: StoredJob): JobEntry {
    const job = new JobEntry(stored.job, this.#state.nextSeq++, stored.tasks);
    for (const attempt of stored.attempts) job.addAttempt(attempt);
    for (const part of stored.checkpointParts ?? []) job.checkpointsOf(part.taskIndex).parts.push(part);
    const header = this.#state.ended.get(job.id);
    this.#state.ended.delete(job.id);
    this.#state.addJob(job);
    this.#undo.push(() => {
      this.#state.removeJob(job);
      if (header) this.#state.ended.set(header);
    });
    return job;
  }

  /** Removes a job with everything it has: one in memory, or one retired (its header only). */
  removeJob(id: string): void {
    const job = this.#state.jobs.get(id);
    const header = this.#state.ended.get(id);
    if (job) this.#state.removeJob(job);
    this.#state.ended.delete(id);
    this.#undo.push(() => {
      if (job) this.#state.addJob(job);
      if (header) this.#state.ended.set(header);
    });
    this.#changes.push({ op: "deleteJob", jobId: id });
  }

  /** A new workflow (its jobs are added on their own, in the same step). */
  addWorkflow(workflow: WorkflowRecord): void {
    this.#state.addWorkflow(workflow);
    this.#undo.push(() => this.#state.removeWorkflow(workflow));
    this.#changes.push({ op: "putWorkflow", workflow });
  }

  // ---- tasks

  updateTask(job: JobEntry, task: TaskRecord, change: TaskChange): void {
    this.updateTasks(job, [task], change);
  }

  /**
   * Changes tasks of one job alike, recorded in one change: fields first, then the migration rule,
   * then the state (a pending task's back-off follows its notBefore).
   */
  updateTasks(job: JobEntry, tasks: TaskRecord[], change: TaskChange): void {
    const { migration, state, ...fields } = change;
    this.#undo.push(undoTasks(this.#state, job, tasks, fields, migration !== undefined, state !== undefined));
    for (const task of tasks) {
      Object.assign(task, fields);
      if (fields.checkpoint) job.checkpointCommitted();
      if (migration !== undefined) job.setMigration(task, migration);
      if (state !== undefined) this.#state.setTaskState(job, task, state);
    }
    this.#changes.push({ op: "putTasks", tasks });
  }

  /** A task's restart point (a committed checkpoint generation). */
  setCheckpoint(job: JobEntry, task: TaskRecord, checkpoint: CheckpointInfo): void {
    this.updateTask(job, task, { checkpoint });
  }

  // ---- attempts

  /** A new attempt, live on its hosts: it holds their slots and memory until it ends. */
  addAttempt(job: JobEntry, attempt: AttemptRecord): LiveAttempt {
    job.addAttempt(attempt);
    const live = this.#state.activate(job, attempt);
    this.#undo.push(() => {
      this.#state.deactivate(attempt);
      job.removeLatestAttempt(attempt);
    });
    this.#changes.push({ op: "putAttempt", attempt });
    return live;
  }

  /** Its agent started it (every rank of a gang). */
  attemptRunning(attempt: AttemptRecord): void {
    const { state } = attempt;
    this.#undo.push(() => {
      attempt.state = state;
    });
    attempt.state = "running";
    this.#changes.push({ op: "putAttempt", attempt });
  }

  /** Asked to stop, with the intent it ends with. */
  attemptStopping(attempt: AttemptRecord, stop: StopIntent): void {
    const before = { state: attempt.state, stop: attempt.stop };
    this.#undo.push(() => Object.assign(attempt, before));
    attempt.state = "stopping";
    attempt.stop = stop;
    this.#changes.push({ op: "putAttempt", attempt });
  }

  /** Ended now: its hosts' room is free again and its run counts in its owner's usage. */
  endAttempt(job: JobEntry, attempt: AttemptRecord, end: AttemptEndRecord): void {
    const before = {
      state: attempt.state,
      outcome: attempt.outcome,
      exitCode: attempt.exitCode,
      reason: attempt.reason,
      endedAt: attempt.endedAt,
      usage: attempt.usage,
    };
    const owner = job.record.owner;
    const used = this.#state.owners.usedMark(owner);
    attempt.state = "ended";
    attempt.outcome = end.outcome;
    attempt.exitCode = end.exitCode;
    attempt.reason = end.reason;
    attempt.endedAt = this.#now;
    attempt.usage = end.usage ?? null;
    job.attemptEnded(attempt);
    const live = this.#state.deactivate(attempt);
    this.#undo.push(() => {
      this.#state.owners.restoreUsed(owner, used);
      job.attemptReopened(attempt);
      Object.assign(attempt, before);
      if (live) this.#state.reactivate(live);
    });
    this.#changes.push({ op: "putAttempt", attempt });
  }

  // ---- hosts

  /** An agent attached with this record: a new host, or a known one whose record is replaced. */
  attachHost(record: HostRecord): HostEntry {
    let host = this.#state.hosts.get(record.name);
    if (!host) {
      host = newHostEntry(record, true);
      this.#state.hosts.set(record.name, host);
      this.#undo.push(() => this.#state.hosts.delete(record.name));
    } else {
      const known = host;
      const before = {
        record: known.record,
        lastSeen: known.lastSeen,
        facts: known.facts,
        connected: known.connected,
      };
      this.#undo.push(() => Object.assign(known, before));
      host.record = record;
      host.lastSeen = record.lastSeen;
      host.facts = record.facts;
      host.connected = true;
    }
    this.#changes.push({ op: "putHost", host: record });
    return host;
  }

  /** A new state; the record takes the lease and facts the agent last reported (soft state) with it. */
  setHostState(host: HostEntry, state: HostState): void {
    const before = { record: host.record, connected: host.connected };
    this.#undo.push(() => Object.assign(host, before));
    host.record = hostRecordNow(host);
    host.record.state = state;
    // A lost host's agent is not attached, whatever its socket says.
    if (state === "lost") host.connected = false;
    this.#changes.push({ op: "putHost", host: host.record });
  }

  removeHost(name: string): void {
    const host = this.#state.hosts.get(name);
    this.#state.hosts.delete(name);
    if (host) this.#undo.push(() => this.#state.hosts.set(name, host));
    this.#changes.push({ op: "deleteHost", name });
  }

  // ---- tokens

  addToken(record: TokenRecord): void {
    const before = this.#state.tokens.get(record.id);
    this.#state.tokens.put(record);
    this.#undo.push(() => {
      if (before) this.#state.tokens.put(before);
      else this.#state.tokens.delete(record.id);
    });
    this.#changes.push({ op: "putToken", token: record });
  }

  /** Revoked now (tokens are kept, with when they were revoked). */
  revokeToken(record: TokenRecord): void {
    const { revokedAt } = record;
    this.#undo.push(() => {
      record.revokedAt = revokedAt;
      this.#state.tokens.put(record);
    });
    record.revokedAt = this.#now;
    // Put again: what the registry derives from its tokens (users' groups) is made anew.
    this.#state.tokens.put(record);
    this.#changes.push({ op: "putToken", token: record });
  }

  // ---- secrets

  /** A user's secret set (new, or in place of theirs of that name), or removed (null). */
  setSecret(owner: string, name: string, record: SecretRecord | null): void {
    const before = this.#state.secrets.get(owner, name);
    this.#state.secrets.set(owner, name, record);
    this.#undo.push(() => this.#state.secrets.set(owner, name, before ?? null));
    this.#changes.push(record ? { op: "putSecret", secret: record } : { op: "deleteSecret", owner, name });
  }

  // ---- the broker's own records

  /** A meta entry (state: ClusterState.meta). */
  setMeta(key: string, value: string): void {
    const meta = this.#state.meta;
    const before = meta.get(key);
    meta.set(key, value);
    this.#undo.push(() => {
      if (before === undefined) meta.delete(key);
      else meta.set(key, before);
    });
    this.#changes.push({ op: "setMeta", key, value });
  }

  /** Drops the accounting rows of removed jobs whose attempts ended before `endedBefore` (none in memory). */
  purgeAccounting(endedBefore: number): void {
    this.#changes.push({ op: "purgeAccounting", endedBefore });
  }

  // ---- checkpoint parts

  /**
   * Parts found in a store of an earlier version (server/legacy-checkpoints.ts), recorded once: each
   * joins its task's parts in memory when its job is there (one that left memory has them in the
   * store only).
   */
  addCheckpointParts(parts: readonly CheckpointPart[]): void {
    for (const part of parts) {
      const job = this.#state.jobs.get(part.jobId);
      if (job) {
        const checkpoints = job.checkpointsOf(part.taskIndex);
        const before = checkpoints.parts;
        checkpoints.parts = [...before, part];
        this.#undo.push(() => {
          checkpoints.parts = before;
        });
      }
      this.#changes.push({ op: "putCheckpointPart", part });
    }
  }

  /**
   * A task keeps these checkpoint parts from now on: `added` is recorded if kept, and the parts it
   * kept before and keeps no more (by rank and generation) are deleted.
   */
  keepCheckpointParts(job: JobEntry, taskIndex: number, keep: CheckpointPart[], added: CheckpointPart): void {
    const checkpoints = job.checkpointsOf(taskIndex);
    const keyOf = (part: CheckpointPart) => `${part.rank}/${part.generation}`;
    const kept = new Set(keep.map(keyOf));
    const before = checkpoints.parts;
    checkpoints.parts = keep;
    this.#undo.push(() => {
      checkpoints.parts = before;
    });
    if (keep.includes(added)) this.#changes.push({ op: "putCheckpointPart", part: added });
    const deleted = new Set<string>();
    for (const part of before) {
      const key = keyOf(part);
      if (kept.has(key) || deleted.has(key)) continue;
      deleted.add(key);
      this.#changes.push({
        op: "deleteCheckpointPart",
        jobId: job.id,
        taskIndex,
        rank: part.rank,
        generation: part.generation,
      });
    }
  }
}

/** The values `target` has now of the fields `change` sets (to put back with Object.assign). */
function valuesOf<T extends object>(target: T, change: Partial<T>): Partial<T> {
  const before: Partial<T> = {};
  for (const key of Object.keys(change) as (keyof T)[]) before[key] = target[key];
  return before;
}

/**
 * How to take back updateTasks(job, tasks, change), read before it is made: each task's fields,
 * and its migration rule and state when the change sets them, put back (the state last, so that its
 * back-off follows its notBefore), and whether the job's tasks checkpoint. Kept in flat arrays: a
 * step of a short task updates one task twice.
 */
function undoTasks(
  state: ClusterState,
  job: JobEntry,
  tasks: TaskRecord[],
  fields: Partial<TaskRecord>,
  migration: boolean,
  taskState: boolean,
): () => void {
  const keys = Object.keys(fields) as (keyof TaskRecord)[];
  const values: unknown[] = [];
  for (const task of tasks) for (const key of keys) values.push(task[key]);
  const migrations = migration ? tasks.map((task) => task.migration) : null;
  const states = taskState ? tasks.map((task) => task.state) : null;
  const checkpoints = job.checkpoints;
  return () => {
    for (let i = tasks.length - 1; i >= 0; i--) {
      const task = tasks[i] as unknown as Record<string, unknown>;
      for (let k = 0; k < keys.length; k++) task[keys[k]] = values[i * keys.length + k];
      if (migrations) job.setMigration(tasks[i], migrations[i]);
      if (states) state.setTaskState(job, tasks[i], states[i]);
    }
    job.checkpointCommitted(checkpoints);
  };
}
