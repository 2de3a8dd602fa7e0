// The one way handlers change durable state: each method changes the in-memory state (records and
// their indexes) and adds the store change that says the same, together, so memory and store never
// go apart by a change made and not recorded (or recorded and not made). Handlers read the state
// freely but write its records only through here. Not durable, and so changed directly: what the
// agents report from moment to moment (state/soft-state.ts), and the reactor's own bookkeeping of
// the moment (room kept by preemptions, when a task last moved, contract watches, a gang's ranks,
// checkpoint objects not yet committed), which a restart starts afresh.
// Test: test/unit/state-round-trip.test.ts recovers the state from the changes and compares.

import type { AttemptUsage } from "../../common/model/attempt-usage.ts";
import { isNewTask } from "../../common/model/new-records.ts";
import type {
  AttemptRecord,
  CheckpointInfo,
  CheckpointPart,
  HostRecord,
  JobRecord,
  MigrationIntent,
  StopIntent,
  TaskRecord,
  TokenRecord,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { AttemptOutcome, HostState, TaskState } from "../../common/model/states.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import { type HostEntry, type LiveAttempt, newHostEntry } from "../state/host-entry.ts";
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

  constructor(state: ClusterState, now: number, changes: Change[]) {
    this.#state = state;
    this.#now = now;
    this.#changes = changes;
  }

  // ---- jobs

  /** A new job with its tasks. */
  addJob(job: JobEntry): void {
    this.#state.addJob(job);
    this.#changes.push({ op: "putJob", job: job.record });
    this.#changes.push(newTasksChange(job.record.id, job.tasks));
  }

  updateJob(job: JobEntry, change: JobChange): void {
    Object.assign(job.record, change);
    this.#changes.push({ op: "putJob", job: job.record });
  }

  /** Requirements the running job wrote (already checked): they replace the job's own from now on. */
  setDynamicRequirements(job: JobEntry, source: string): void {
    job.setDynamicRequirements(source);
    this.#changes.push({ op: "putJob", job: job.record });
  }

  /**
   * A new job file for a job not yet running (an update, already checked), with its priority; the
   * job moves to its new place in the queue. `dynamicRequirements`: what the job wrote for itself
   * that still holds (null once the update replaced the requirements).
   */
  replaceJobSpec(job: JobEntry, spec: JobRecord["spec"], dynamicRequirements: string | null): void {
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
    this.#state.ended.delete(job.id);
    this.#state.addJob(job);
    return job;
  }

  /** Removes a job with everything it has: one in memory, or one retired (its header only). */
  removeJob(id: string): void {
    const job = this.#state.jobs.get(id);
    if (job) this.#state.removeJob(job);
    this.#state.ended.delete(id);
    this.#changes.push({ op: "deleteJob", jobId: id });
  }

  /** A new workflow (its jobs are added on their own, in the same step). */
  addWorkflow(workflow: WorkflowRecord): void {
    this.#state.addWorkflow(workflow);
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
    this.#changes.push({ op: "putAttempt", attempt });
    return live;
  }

  /** Its agent started it (every rank of a gang). */
  attemptRunning(attempt: AttemptRecord): void {
    attempt.state = "running";
    this.#changes.push({ op: "putAttempt", attempt });
  }

  /** Asked to stop, with the intent it ends with. */
  attemptStopping(attempt: AttemptRecord, stop: StopIntent): void {
    attempt.state = "stopping";
    attempt.stop = stop;
    this.#changes.push({ op: "putAttempt", attempt });
  }

  /** Ended now: its hosts' room is free again and its run counts in its owner's usage. */
  endAttempt(job: JobEntry, attempt: AttemptRecord, end: AttemptEndRecord): void {
    attempt.state = "ended";
    attempt.outcome = end.outcome;
    attempt.exitCode = end.exitCode;
    attempt.reason = end.reason;
    attempt.endedAt = this.#now;
    attempt.usage = end.usage ?? null;
    job.attemptEnded(attempt);
    this.#state.deactivate(attempt);
    this.#changes.push({ op: "putAttempt", attempt });
  }

  // ---- hosts

  /** An agent attached with this record: a new host, or a known one whose record is replaced. */
  attachHost(record: HostRecord): HostEntry {
    let host = this.#state.hosts.get(record.name);
    if (!host) {
      host = newHostEntry(record, true);
      this.#state.hosts.set(record.name, host);
    } else {
      host.record = record;
      host.connected = true;
    }
    this.#changes.push({ op: "putHost", host: record });
    return host;
  }

  setHostState(host: HostEntry, state: HostState): void {
    host.record.state = state;
    // A lost host's agent is not attached, whatever its socket says.
    if (state === "lost") host.connected = false;
    this.#changes.push({ op: "putHost", host: host.record });
  }

  removeHost(name: string): void {
    this.#state.hosts.delete(name);
    this.#changes.push({ op: "deleteHost", name });
  }

  // ---- tokens

  addToken(record: TokenRecord): void {
    this.#state.tokens.put(record);
    this.#changes.push({ op: "putToken", token: record });
  }

  /** Revoked now (tokens are kept, with when they were revoked). */
  revokeToken(record: TokenRecord): void {
    record.revokedAt = this.#now;
    // Put again: what the registry derives from its tokens (users' groups) is made anew.
    this.#state.tokens.put(record);
    this.#changes.push({ op: "putToken", token: record });
  }

  // ---- checkpoint parts

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
