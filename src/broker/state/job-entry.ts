// The server's in-memory copy of one job: its records plus the indexes the scheduler needs.
// The store holds the same records; this copy is rebuilt from it at start (state/recover.ts).

import { type CompiledExpression, compileExpression } from "../../common/model/cel.ts";
import { containerHostPaths } from "../../common/model/container-spec.ts";
import { type Dependency, dependenciesOf } from "../../common/model/dependencies.ts";
import { isLive } from "../../common/model/ids.ts";
import { arrayParallel, nodesOf } from "../../common/model/job-spec.ts";
import { countBucket, emptyCounts, type TaskCounts } from "../../common/model/job-state.ts";
import { DEFAULT_QOS } from "../../common/model/qos-name.ts";
import type {
  AttemptRecord,
  JobHeader,
  JobRecord,
  MigrationIntent,
  TaskRecord,
} from "../../common/model/records.ts";
import { mayAddReplica } from "../../common/model/replicas.ts";
import type { TaskState } from "../../common/model/states.ts";
import { transfersNeeded } from "../../common/model/transfers.ts";
import { knownInputDigests } from "../scheduler/data-affinity.ts";
import type { ProgressSample } from "../scheduler/estimate.ts";
import { migrationAllows, migrationLapsesAt, migrationWaitReason } from "../scheduler/migration-rule.ts";
import type { ConstrainedTask, ContainerNeeds, JobView } from "../scheduler/view.ts";
import type { StoredJob } from "../store/store.ts";
import { TaskCheckpoints } from "./task-checkpoints.ts";

const NO_INDEXES: ReadonlySet<number> = new Set();
const NO_PROGRESS: ReadonlyMap<number, ProgressSample> = new Map();

/** Refused requirements texts a job remembers, so as not to report the same one again. */
const REFUSED_KEPT = 64;

/** A job's dependsOn as read: in order, by the job named, and whether any is `tasks: same`. */
export interface JobDependencies {
  list: readonly Dependency[];
  byJob: ReadonlyMap<string, readonly Dependency[]>;
  sameTasks: boolean;
}

export class JobEntry implements JobView {
  readonly record: JobRecord;
  readonly seq: number;
  readonly tasks: TaskRecord[];
  /** Attempts per task index, oldest first. */
  readonly attempts = new Map<number, AttemptRecord[]>();
  readonly counts: TaskCounts = emptyCounts();
  /** Pending task indexes: those ready to start and those waiting out a retry back-off. */
  readonly pending = new Set<number>();
  /** Pending tasks that may start now, in the order they should start. */
  readonly ready = new Set<number>();
  /** Pending tasks waiting out a retry back-off: made when the first one is (most jobs have none). */
  #delayed: Set<number> | null = null;
  /** The last progress each running task reported: made when the first report comes. */
  #progress: Map<number, ProgressSample> | null = null;
  /** The job file's requirements, or those the job wrote for itself since (setDynamicRequirements). */
  requirements: CompiledExpression | null;
  rank: CompiledExpression | null;
  /**
   * Requirements texts the job wrote that were refused (invalid), the latest REFUSED_KEPT, oldest
   * first: made when the first is. A job writing a new text every time must not grow the server.
   */
  #refusedRequirements: Set<string> | null = null;
  /** Succeeded attempts that ran from the start (not from a checkpoint), and their seconds in all. */
  #finished = { count: 0, seconds: 0 };
  #checkpoints = false;
  /** dependsOn read once (it never changes after submit): made when first asked for. */
  #dependencies: JobDependencies | null = null;
  /**
   * Where the last look at the dependencies found one still waiting (an index of
   * `dependencies.list`): the next look starts there (state/dependency-verdicts.ts). Not durable.
   */
  waitHint = 0;
  /** Tasks with a migration rule (TaskRecord.migration): made when the first gets one (they are few). */
  #migrating: Set<number> | null = null;
  /** Each task's checkpoint parts and pending objects: made when the first is known. */
  #taskCheckpoints: Map<number, TaskCheckpoints> | null = null;
  /**
   * Live attempts per task, for the tasks that have one (starting, running or stopping): its size is
   * how many tasks hold slots now, which an array's `parallel` limits (read by every pass: kept, not counted).
   */
  readonly #liveByTask = new Map<number, number>();
  /** A multi-node job's next attempt after a lost rank: back to the healthy hosts, the lost avoided. */
  gangRestart: { previous: (string | null)[]; avoid: string[] } | null = null;
  /** The digests known of its inputs, once asked for (undefined: none); null: not worked out yet. */
  #inputDigests: readonly string[] | undefined | null = null;

  constructor(record: JobRecord, seq: number, tasks: TaskRecord[]) {
    this.record = record;
    this.seq = seq;
    this.tasks = tasks;
    const requirements = record.dynamicRequirements ?? record.spec.requirements;
    this.requirements = requirements ? compileExpression(requirements) : null;
    this.rank = record.spec.rank ? compileExpression(record.spec.rank) : null;
    for (const task of tasks) {
      if (task.checkpoint !== null) this.#checkpoints = true;
      if (task.migration !== null) this.#migratingTasks().add(task.index);
      this.counts[countBucket(task.state)]++;
      if (task.state === "pending") this.addPending(task);
    }
  }

  get id(): string {
    return this.record.id;
  }

  /** The job's header as it is now: the line `ps` prints (job-header.ts). */
  get header(): JobHeader {
    const { record } = this;
    return {
      id: record.id,
      name: record.name,
      owner: record.owner,
      state: record.state,
      priority: record.priority,
      createdAt: record.createdAt,
      endedAt: record.endedAt,
      taskCount: this.tasks.length,
      counts: { ...this.counts },
      qos: this.qos,
    };
  }

  /** Pending tasks waiting out a retry back-off (notBefore in the future when they were put back). */
  get delayed(): ReadonlySet<number> {
    return this.#delayed ?? NO_INDEXES;
  }

  /** The last progress each running task reported (fraction 0..1, when), from heartbeats. */
  get progress(): ReadonlyMap<number, ProgressSample> {
    return this.#progress ?? NO_PROGRESS;
  }

  setProgress(taskIndex: number, sample: ProgressSample): void {
    this.#progress ??= new Map();
    this.#progress.set(taskIndex, sample);
  }

  clearProgress(taskIndex: number): void {
    this.#progress?.delete(taskIndex);
  }

  /**
   * Notes requirements the job wrote that were refused (invalid); false when this text was refused
   * before (each of the latest REFUSED_KEPT is reported once per server run).
   */
  refuseRequirements(text: string): boolean {
    this.#refusedRequirements ??= new Set();
    if (this.#refusedRequirements.has(text)) return false;
    this.#refusedRequirements.add(text);
    if (this.#refusedRequirements.size > REFUSED_KEPT) {
      const oldest = this.#refusedRequirements.values().next().value;
      if (oldest !== undefined) this.#refusedRequirements.delete(oldest);
    }
    return true;
  }

  /** Takes back refuseRequirements(text) that returned true (its step threw: reactor/writes.ts). */
  refusalTakenBack(text: string): void {
    this.#refusedRequirements?.delete(text);
  }

  get priority(): number {
    return this.record.priority;
  }
  get owner(): string {
    return this.record.owner;
  }
  /** The job's QoS tier (a job stored before tiers existed has the default one). */
  get qos(): string {
    return this.record.spec.qos ?? DEFAULT_QOS;
  }
  /** Its tier's priority under the server's QoS policy, set when the job joins the state (ClusterState.addJob). */
  qosPriority = 0;
  /** Tasks not ended (waiting, pending, held or running): what the queued-task limits count. */
  get unendedTasks(): number {
    return this.counts.pending + this.counts.running;
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
  get gpus(): number | undefined {
    return this.record.spec.resources.gpus;
  }
  get custom(): Readonly<Record<string, number>> | undefined {
    return this.record.spec.resources.custom;
  }
  get workdir(): string | undefined {
    return this.record.spec.workdir;
  }
  /** What the job's agent must move itself (model/transfers.ts); inputs and outputs never change after submit. */
  get transfers(): readonly string[] {
    this.#transfers ??= transfersNeeded(this.record.spec.inputs, this.record.spec.outputs);
    return this.#transfers;
  }
  #transfers: readonly string[] | undefined;
  /** The image it runs in and the host paths that must be shared for it (model/container-spec.ts); undefined: none. */
  get container(): ContainerNeeds | undefined {
    const container = this.record.spec.container;
    if (!container) return undefined;
    this.#container ??= { image: container.image, hostPaths: containerHostPaths(container) };
    return this.#container;
  }
  #container: ContainerNeeds | undefined;
  /** A task's memory grown after running out of memory (TaskRecord.memoryMb); undefined: the job's. */
  taskMemoryMb(taskIndex: number): number | undefined {
    return this.tasks[taskIndex]?.memoryMb ?? undefined;
  }
  get slowHosts(): readonly string[] {
    return this.record.slowHosts;
  }
  /** The digests known of its inputs (scheduler/data-affinity.ts), made when first asked for; undefined: none. */
  get inputDigests(): readonly string[] | undefined {
    if (this.#inputDigests === null) {
      const { inputs } = this.record.spec;
      const digests = inputs.length === 0 ? [] : knownInputDigests(inputs, this.record.inputDigests);
      this.#inputDigests = digests.length > 0 ? digests : undefined;
    }
    return this.#inputDigests;
  }

  /** Requirements the running job wrote (already checked): they replace the job's own from now on. */
  setDynamicRequirements(source: string): void {
    this.record.dynamicRequirements = source;
    this.requirements = compileExpression(source);
  }

  /**
   * A new priority and job file (an update of a job not yet running, already checked): the
   * requirements and rank are compiled again, and requirements the job wrote for itself give way
   * to the new ones when they change.
   */
  replaceSpec(spec: JobRecord["spec"], dynamicRequirements: string | null): void {
    this.record.spec = spec;
    this.#inputDigests = null;
    this.record.priority = spec.priority;
    this.record.dynamicRequirements = dynamicRequirements;
    const requirements = dynamicRequirements ?? spec.requirements;
    this.requirements = requirements ? compileExpression(requirements) : null;
    this.rank = spec.rank ? compileExpression(spec.rank) : null;
  }

  /** A multi-node job's gang (scheduler/stages/gang.ts); undefined for a single-host job. */
  get gang(): JobView["gang"] {
    const nodes = nodesOf(this.record.spec);
    if (nodes <= 1) return undefined;
    return {
      nodes,
      nodesPerHost: this.record.spec.nodesPerHost ?? 1,
      restartPool: this.record.spec.restartPool ?? null,
      ...(this.gangRestart ?? {}),
    };
  }

  /** Since when the job's work has waited: its last attempt's end, else its submission. */
  get readySince(): number {
    return this.latestAttempt(0)?.endedAt ?? this.record.createdAt;
  }

  get replicas(): number {
    return this.record.spec.replicas;
  }

  /** Whether a task with `live` attempts may have one more replica (model/replicas.ts). */
  mayReplicate(taskIndex: number, live: number): boolean {
    const task = this.tasks[taskIndex];
    return !!task && mayAddReplica(task, live, this.replicas, this.record.spec.retry);
  }

  /** Whether the scheduler should look at this job at all. */
  get schedulable(): boolean {
    return this.ready.size > 0 && !this.record.held && !this.record.cancelRequested;
  }

  *readyTasks(now: number): Iterable<number> {
    for (const index of this.ready) {
      const task = this.tasks[index];
      if (task.migration !== null) continue;
      if (task.notBefore === null || task.notBefore <= now) yield index;
    }
  }

  /**
   * Ready tasks with a migration rule, each with the hosts it allows (until the rule lapses,
   * migration-rule.ts): found without a pass over every ready task.
   */
  *constrainedTasks(now: number): Iterable<ConstrainedTask> {
    if (!this.#migrating) return;
    for (const index of this.#migrating) {
      const task = this.tasks[index];
      const rule = task.migration;
      if (rule === null || !this.ready.has(index) || (task.notBefore !== null && task.notBefore > now))
        continue;
      const lapsesAt = migrationLapsesAt(this.latestAttempt(index)?.endedAt ?? null);
      yield {
        index,
        allows: (host) => migrationAllows(rule, lapsesAt, now, host),
        waitReason: migrationWaitReason(index, rule, lapsesAt, now),
        ...(lapsesAt !== null && lapsesAt > now ? { lapsesAt } : {}),
      };
    }
  }

  /** Records where a task's next attempt may go (a migration), or that it may go anywhere again. */
  setMigration(task: TaskRecord, rule: MigrationIntent | null): void {
    task.migration = rule;
    if (rule) this.#migratingTasks().add(task.index);
    else this.#migrating?.delete(task.index);
  }

  #migratingTasks(): Set<number> {
    this.#migrating ??= new Set();
    return this.#migrating;
  }

  /** Moves a task to a new state, keeping the counts and the pending sets right. */
  setTaskState(task: TaskRecord, state: TaskState): void {
    if (task.state === state) return;
    this.counts[countBucket(task.state)]--;
    this.counts[countBucket(state)]++;
    if (task.state === "pending") {
      this.pending.delete(task.index);
      this.ready.delete(task.index);
      this.#delayed?.delete(task.index);
    }
    task.state = state;
    if (state === "pending") this.addPending(task);
  }

  /** A delayed task whose back-off is over becomes ready. */
  promote(task: TaskRecord): void {
    if (this.#delayed?.delete(task.index)) this.ready.add(task.index);
  }

  private addPending(task: TaskRecord): void {
    this.pending.add(task.index);
    if (task.notBefore === null) {
      this.ready.add(task.index);
      return;
    }
    this.#delayed ??= new Set();
    this.#delayed.add(task.index);
  }

  addAttempt(attempt: AttemptRecord): void {
    const list = this.attempts.get(attempt.taskIndex);
    if (list) list.push(attempt);
    else this.attempts.set(attempt.taskIndex, [attempt]);
    if (attempt.state === "ended") this.#countRun(attempt, 1);
    else this.#liveByTask.set(attempt.taskIndex, (this.#liveByTask.get(attempt.taskIndex) ?? 0) + 1);
  }

  /** A live attempt (one addAttempt counted live) ended. */
  attemptEnded(attempt: AttemptRecord): void {
    const live = (this.#liveByTask.get(attempt.taskIndex) ?? 0) - 1;
    if (live > 0) this.#liveByTask.set(attempt.taskIndex, live);
    else this.#liveByTask.delete(attempt.taskIndex);
    this.#countRun(attempt, 1);
  }

  /** Takes back attemptEnded (its attempt still as it ended): a step that threw (reactor/writes.ts). */
  attemptReopened(attempt: AttemptRecord): void {
    this.#countRun(attempt, -1);
    this.#liveByTask.set(attempt.taskIndex, (this.#liveByTask.get(attempt.taskIndex) ?? 0) + 1);
  }

  /** Takes back the task's latest addAttempt: a step that threw (reactor/writes.ts). */
  removeLatestAttempt(attempt: AttemptRecord): void {
    const list = this.attempts.get(attempt.taskIndex);
    if (list?.[list.length - 1] !== attempt) return;
    list.pop();
    if (list.length === 0) this.attempts.delete(attempt.taskIndex);
    if (attempt.state === "ended") this.#countRun(attempt, -1);
    else {
      const live = (this.#liveByTask.get(attempt.taskIndex) ?? 0) - 1;
      if (live > 0) this.#liveByTask.set(attempt.taskIndex, live);
      else this.#liveByTask.delete(attempt.taskIndex);
    }
  }

  /** Tasks with a live attempt (starting, running or stopping): those holding slots now. */
  get liveTasks(): number {
    return this.#liveByTask.size;
  }

  /** At most this many of the array's tasks run at once (`array.parallel`); undefined: no limit. */
  get parallel(): number | undefined {
    return arrayParallel(this.record.spec);
  }

  /** A whole run that succeeded tells how long the job's tasks take (sign -1: one counted is taken back). */
  #countRun(attempt: AttemptRecord, sign: 1 | -1): void {
    if (attempt.outcome !== "succeeded" || attempt.restarted || attempt.endedAt === null) return;
    this.#finished.count += sign;
    this.#finished.seconds += (sign * Math.max(0, attempt.endedAt - attempt.startedAt)) / 1000;
  }

  /** How long a task is expected to run: its time limit, else the mean of earlier whole runs; null when unknown. */
  get expectedSeconds(): number | null {
    const limit = this.record.spec.timeLimitSeconds;
    if (limit !== undefined) return limit;
    const { count, seconds } = this.#finished;
    return count > 0 ? seconds / count : null;
  }

  /** How long a pilot for this job may wait in a batch queue before its pool is left (the job file's maxQueueWaitSeconds). */
  get maxQueueWaitSeconds(): number | null {
    return this.record.spec.maxQueueWaitSeconds ?? null;
  }

  /**
   * Whether the job's tasks checkpoint: one of them has stored a checkpoint. Read by every plan pass
   * (batches.ts), so it is kept, not searched for: set at start and when a checkpoint is committed.
   */
  get checkpoints(): boolean {
    return this.#checkpoints;
  }

  /** A task of the job committed a checkpoint (false: the commit was taken back, reactor/writes.ts). */
  checkpointCommitted(committed = true): void {
    this.#checkpoints = committed;
  }

  /** A task's checkpoint parts and pending objects (task-checkpoints.ts). */
  checkpointsOf(taskIndex: number): TaskCheckpoints {
    this.#taskCheckpoints ??= new Map();
    let checkpoints = this.#taskCheckpoints.get(taskIndex);
    if (!checkpoints) {
      checkpoints = new TaskCheckpoints();
      this.#taskCheckpoints.set(taskIndex, checkpoints);
    }
    return checkpoints;
  }

  attempt(taskIndex: number, number: number): AttemptRecord | undefined {
    return this.attempts.get(taskIndex)?.find((attempt) => attempt.number === number);
  }

  latestAttempt(taskIndex: number): AttemptRecord | undefined {
    const list = this.attempts.get(taskIndex);
    return list?.[list.length - 1];
  }

  /** Attempts of a task that have not ended (one today; several with replicas). */
  liveAttempts(taskIndex: number): AttemptRecord[] {
    return (this.attempts.get(taskIndex) ?? []).filter(isLive);
  }

  /** Every live attempt of the job. */
  *allLiveAttempts(): Iterable<AttemptRecord> {
    for (const list of this.attempts.values()) for (const attempt of list) if (isLive(attempt)) yield attempt;
  }

  /** The job's dependsOn, read once. */
  get dependencies(): JobDependencies {
    if (!this.#dependencies) {
      const list = dependenciesOf(this.record.spec.dependsOn);
      const byJob = new Map<string, Dependency[]>();
      for (const dependency of list) {
        const entries = byJob.get(dependency.job);
        if (entries) entries.push(dependency);
        else byJob.set(dependency.job, [dependency]);
      }
      this.#dependencies = { list, byJob, sameTasks: list.some((dependency) => dependency.sameTasks) };
    }
    return this.#dependencies;
  }

  isEnded(): boolean {
    const { succeeded, failed, cancelled } = this.counts;
    return succeeded + failed + cancelled === this.tasks.length;
  }
}

/** A job read back from the store (one that has left memory), with its attempts; not part of any state. */
export function entryOfStored({ job, tasks, attempts }: StoredJob): JobEntry {
  const entry = new JobEntry(job, 0, tasks);
  for (const attempt of attempts) entry.addAttempt(attempt);
  return entry;
}
