// The reactor: one place where every event (submit, report, host joined or lost, user control)
// changes the state. Each change is committed through the store before anyone is told of it:
// before the API answers, before an agent is sent a start, before a report is acknowledged.

import { EventEmitter } from "node:events";
import { deriveJobState } from "../model/job-state.ts";
import { type JobSpec, taskCount } from "../model/jobfile.ts";
import type {
  AttemptRecord,
  EventRecord,
  HostFacts,
  HostRecord,
  JobRecord,
  TaskRecord,
} from "../model/records.ts";
import { type AttemptOutcome, isEndedState } from "../model/states.ts";
import { taskAfterAttempt } from "../model/task-outcome.ts";
import type { EndedEvent, HeartbeatMessage, HelloMessage, ServerMessage } from "../protocol/messages.ts";
import { explainJob, type HostExplanation } from "../scheduler/explain.ts";
import { schedule } from "../scheduler/plan.ts";
import { compareQueueOrder } from "../scheduler/queue-order.ts";
import type { HostView } from "../scheduler/view.ts";
import type { GroupCommitter } from "../store/group-commit.ts";
import type { Change, StoreSnapshot } from "../store/store.ts";
import { JobEntry } from "./job-entry.ts";

export interface CoreOptions {
  heartbeatSeconds: number;
  hostTimeoutSeconds: number;
  now?: () => number;
  random?: () => number;
}

/** How the core reaches agents; the gateway implements it. */
export interface AgentLinks {
  send(host: string, message: ServerMessage): boolean;
  /** Drops the connection, so that the agent must say hello again (and learn what to kill). */
  disconnect(host: string): void;
}

interface HostEntry {
  record: HostRecord;
  connected: boolean;
  usedSlots: number;
  usedMemoryMb: number;
  /** Active attempts on this host, by attempt key. */
  active: Map<string, { job: JobEntry; attempt: AttemptRecord }>;
}

export class NotFoundError extends Error {}
export class ConflictError extends Error {}
export class InvalidRequestError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

function attemptKey(jobId: string, taskIndex: number, number: number): string {
  return `${jobId}/${taskIndex}/${number}`;
}

export class Core {
  readonly events = new EventEmitter<{ event: [EventRecord]; job: [JobEntry] }>();
  private readonly jobs = new Map<string, JobEntry>();
  private readonly hosts = new Map<string, HostEntry>();
  /** Pending tasks waiting out a retry back-off, so the tick knows when to schedule again. */
  private readonly backingOff = new Set<TaskRecord>();
  private nextJobId = 1;
  private nextSeq = 1;
  private schedulePending = false;
  private stopped = false;
  private timers: NodeJS.Timeout[] = [];
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly committer: GroupCommitter;
  private readonly options: CoreOptions;
  private links: AgentLinks = { send: () => false, disconnect: () => {} };

  constructor(committer: GroupCommitter, options: CoreOptions) {
    this.committer = committer;
    this.options = options;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  setLinks(links: AgentLinks): void {
    this.links = links;
  }

  /** Rebuilds the state from the store (GridWay's recover). Hosts get one host timeout to re-attach. */
  recover(snapshot: StoreSnapshot): void {
    const now = this.now();
    const tasksByJob = new Map<string, TaskRecord[]>();
    for (const task of snapshot.tasks) {
      const list = tasksByJob.get(task.jobId);
      if (list) list.push(task);
      else tasksByJob.set(task.jobId, [task]);
    }
    for (const job of snapshot.jobs) {
      const entry = new JobEntry(job, this.nextSeq++, tasksByJob.get(job.id) ?? []);
      this.jobs.set(job.id, entry);
      for (const index of entry.pending) {
        if (entry.tasks[index].notBefore !== null) this.backingOff.add(entry.tasks[index]);
      }
      const numeric = Number(job.id);
      if (Number.isInteger(numeric) && numeric >= this.nextJobId) this.nextJobId = numeric + 1;
    }
    const storedNext = Number(snapshot.meta.nextJobId ?? "1");
    if (storedNext > this.nextJobId) this.nextJobId = storedNext;
    for (const host of snapshot.hosts) {
      this.hosts.set(host.name, {
        record: { ...host, lastSeen: now },
        connected: false,
        usedSlots: 0,
        usedMemoryMb: 0,
        active: new Map(),
      });
    }
    for (const attempt of snapshot.attempts) {
      const job = this.jobs.get(attempt.jobId);
      if (!job) continue;
      job.addAttempt(attempt);
      if (attempt.state !== "ended") this.activate(job, attempt);
    }
  }

  start(): void {
    const tick = setInterval(() => this.checkLeases(), 250);
    tick.unref();
    this.timers.push(tick);
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
  }

  // ---- queries

  job(id: string): JobEntry {
    const job = this.jobs.get(id);
    if (!job) throw new NotFoundError(`no job ${id}`);
    return job;
  }

  listJobs(): JobEntry[] {
    return [...this.jobs.values()];
  }

  listHosts(): (HostRecord & { slotsFree: number; connected: boolean })[] {
    return [...this.hosts.values()].map((host) => ({
      ...host.record,
      slotsFree: Math.max(0, host.record.slots - host.usedSlots),
      connected: host.connected,
    }));
  }

  explain(id: string): { reasons: string[]; hosts: HostExplanation[] } {
    const job = this.job(id);
    return { reasons: this.jobReasons(job), hosts: explainJob(job, this.hostViews()) };
  }

  /** What keeps a job's tasks from starting, before any host is looked at. */
  private jobReasons(job: JobEntry): string[] {
    const reasons: string[] = [];
    const { record } = job;
    if (job.isEnded()) return [`the job has ended: ${record.state}`];
    if (record.cancelRequested) reasons.push("cancel was requested: nothing starts again");
    if (record.held) reasons.push("held by a user: `steward release` puts it back in the queue");
    const unmet = record.spec.dependsOn.filter(
      (dependency) => this.jobs.get(dependency)?.record.state !== "succeeded",
    );
    if (unmet.length) {
      const states = unmet.map(
        (dependency) => `${dependency} (${this.jobs.get(dependency)?.record.state ?? "removed"})`,
      );
      reasons.push(
        `waiting for ${unmet.length === 1 ? "its dependency" : "dependencies"} ${states.join(", ")} to succeed`,
      );
    }
    const now = this.now();
    let backingOff = 0;
    let until = 0;
    for (const index of job.pending) {
      const notBefore = job.tasks[index].notBefore;
      if (notBefore !== null && notBefore > now) {
        backingOff++;
        until = Math.max(until, notBefore);
      }
    }
    if (backingOff) {
      const seconds = ((until - now) / 1000).toFixed(1);
      reasons.push(
        `${backingOff} task${backingOff === 1 ? "" : "s"} back off after a failure (the last for ${seconds} s more)`,
      );
    }
    for (const [index, rule] of job.migrations) {
      reasons.push(`task ${index} is migrating ${rule.to ? `to ${rule.to}` : `away from ${rule.from}`}`);
    }
    if (job.pending.size === 0 && job.counts.running > 0) reasons.push("every task that can run is running");
    return reasons;
  }

  // ---- user requests

  /** Creates a job; resolves once it is durable. `inputs` are the input files already stored. */
  async submit(spec: JobSpec, owner: string, inputs: string[], id = this.allocateJobId()): Promise<JobEntry> {
    spec.dependsOn.forEach((dependency, index) => {
      if (!this.jobs.has(dependency))
        throw new InvalidRequestError(`dependsOn[${index}]`, `no job ${dependency}`);
    });
    const now = this.now();
    const count = taskCount(spec);
    const dependenciesMet = this.dependenciesMet(spec);
    const tasks: TaskRecord[] = new Array(count);
    for (let index = 0; index < count; index++) {
      tasks[index] = {
        jobId: id,
        index,
        state: dependenciesMet ? "pending" : "waiting",
        attempts: 0,
        failures: 0,
        losses: 0,
        notBefore: null,
        resultAttempt: null,
        checkpoint: null,
      };
    }
    const record: JobRecord = {
      id,
      name: spec.name ?? defaultName(spec),
      owner,
      state: dependenciesMet ? "pending" : "waiting",
      priority: spec.priority,
      held: false,
      cancelRequested: false,
      createdAt: now,
      endedAt: null,
      spec,
      inputs,
    };
    const job = new JobEntry(record, this.nextSeq++, tasks);
    const event = this.event(
      job,
      "submitted",
      `${count === 1 ? "job" : `array of ${count} tasks`} submitted by ${owner}`,
    );
    this.jobs.set(id, job);
    await this.commit([
      { op: "putJob", job: record },
      { op: "putTasks", tasks },
      { op: "setMeta", key: "nextJobId", value: String(this.nextJobId) },
      { op: "addEvent", event },
    ]);
    this.kick();
    return job;
  }

  allocateJobId(): string {
    return String(this.nextJobId++);
  }

  async cancel(id: string): Promise<JobEntry> {
    const job = this.job(id);
    if (job.isEnded()) return job;
    const changes: Change[] = [];
    job.record.cancelRequested = true;
    const dirty: TaskRecord[] = [];
    for (const task of job.tasks) {
      if (task.state === "pending" || task.state === "waiting" || task.state === "held") {
        job.setTaskState(task, "cancelled");
        dirty.push(task);
      }
    }
    if (dirty.length) changes.push({ op: "putTasks", tasks: dirty });
    changes.push({ op: "putJob", job: job.record });
    changes.push({ op: "addEvent", event: this.event(job, "cancel", "cancel requested") });
    const stops = this.stopActive(job, changes);
    this.refreshJobState(job, changes);
    await this.commit(changes);
    for (const attempt of stops) this.sendStop(job, attempt, "cancelled", "cancelled by user");
    return job;
  }

  /** Holds a job: pending tasks do not start; running attempts are stopped (ended `preempted`, reason `held`). */
  async hold(id: string): Promise<JobEntry> {
    const job = this.job(id);
    if (job.isEnded()) throw new ConflictError(`job ${id} is ${job.record.state}`);
    if (job.record.held) return job;
    job.record.held = true;
    const changes: Change[] = [{ op: "addEvent", event: this.event(job, "hold", "held by user") }];
    const stops = this.stopActive(job, changes);
    changes.push({ op: "putJob", job: job.record });
    this.refreshJobState(job, changes);
    await this.commit(changes);
    for (const attempt of stops) this.sendStop(job, attempt, "preempted", "held");
    return job;
  }

  async release(id: string): Promise<JobEntry> {
    const job = this.job(id);
    if (!job.record.held) return job;
    job.record.held = false;
    const changes: Change[] = [
      { op: "putJob", job: job.record },
      { op: "addEvent", event: this.event(job, "release", "released by user") },
    ];
    this.refreshJobState(job, changes);
    await this.commit(changes);
    this.kick();
    return job;
  }

  /** Stops the job's running attempts with a checkpoint; their tasks restart on another host (or `to`). */
  async migrate(id: string, to: string | null): Promise<JobEntry> {
    const job = this.job(id);
    if (to !== null) {
      const host = this.hosts.get(to);
      if (!host) throw new NotFoundError(`no host ${to}`);
      if (host.record.state !== "ready" || !host.connected) {
        throw new ConflictError(`host ${to} is ${host.connected ? host.record.state : "not connected"}`);
      }
    }
    const changes: Change[] = [];
    const stops: AttemptRecord[] = [];
    for (const list of job.attempts.values()) {
      for (const attempt of list) {
        if (attempt.state !== "running" && attempt.state !== "starting") continue;
        if (to === attempt.host) continue;
        job.migrations.set(attempt.taskIndex, { to, from: attempt.host });
        attempt.state = "stopping";
        changes.push({ op: "putAttempt", attempt });
        stops.push(attempt);
      }
    }
    if (stops.length === 0) throw new ConflictError(`job ${id} has no running attempt to migrate`);
    const where = to ? `to ${to}` : "to another host";
    changes.push({ op: "addEvent", event: this.event(job, "migrate", `migration ${where} requested`) });
    await this.commit(changes);
    for (const attempt of stops) this.sendStop(job, attempt, "migrated", `migrating ${where}`);
    return job;
  }

  /**
   * A checkpoint uploaded by an attempt becomes the task's restart point, if that attempt is still
   * the current one (fencing, as for results). Returns the previous generation.
   */
  async commitCheckpoint(
    jobId: string,
    taskIndex: number,
    number: number,
    generation: number,
    bytes: number,
  ): Promise<number | null> {
    const job = this.job(jobId);
    const attempt = job.attempt(taskIndex, number);
    const task = job.tasks[taskIndex];
    if (!attempt || task.attempts !== number || attempt.state === "ended") {
      throw new ConflictError(`attempt ${number} of task ${taskIndex} is not current: checkpoint ignored`);
    }
    const previous = task.checkpoint?.generation ?? null;
    if (previous !== null && generation <= previous) {
      throw new ConflictError(`checkpoint generation ${generation} is not after ${previous}`);
    }
    task.checkpoint = { generation, bytes, at: this.now() };
    await this.commit([{ op: "putTasks", tasks: [task] }]);
    return previous;
  }

  nextCheckpointGeneration(jobId: string, taskIndex: number): number {
    return (this.job(jobId).tasks[taskIndex].checkpoint?.generation ?? 0) + 1;
  }

  async drain(name: string): Promise<HostRecord> {
    const host = this.hosts.get(name);
    if (!host) throw new NotFoundError(`no host ${name}`);
    if (host.record.state === "ready") {
      host.record.state = "draining";
      await this.commit([{ op: "putHost", host: host.record }]);
    }
    return host.record;
  }

  private stopActive(job: JobEntry, changes: Change[]): AttemptRecord[] {
    const stops: AttemptRecord[] = [];
    for (const list of job.attempts.values()) {
      for (const attempt of list) {
        if (attempt.state === "starting" || attempt.state === "running") {
          attempt.state = "stopping";
          changes.push({ op: "putAttempt", attempt });
          stops.push(attempt);
        }
      }
    }
    return stops;
  }

  async remove(id: string): Promise<void> {
    const job = this.job(id);
    if (!job.isEnded()) throw new ConflictError(`job ${id} is ${job.record.state}: cancel it first`);
    this.jobs.delete(id);
    await this.commit([{ op: "deleteJob", jobId: id }]);
  }

  // ---- agents

  /** An agent said hello. Returns the attempts it must kill (no longer current). */
  async attachHost(
    message: HelloMessage,
  ): Promise<{ kill: { jobId: string; taskIndex: number; attempt: number }[] }> {
    const now = this.now();
    let host = this.hosts.get(message.name);
    const record: HostRecord = {
      name: message.name,
      pool: message.pool,
      state: host?.record.state === "draining" ? "draining" : "ready",
      slots: message.slots,
      labels: message.labels,
      facts: message.facts,
      lastSeen: now,
    };
    if (!host) {
      host = { record, connected: true, usedSlots: 0, usedMemoryMb: 0, active: new Map() };
      this.hosts.set(message.name, host);
    } else {
      host.record = record;
      host.connected = true;
    }
    const changes: Change[] = [{ op: "putHost", host: record }];
    const kill: { jobId: string; taskIndex: number; attempt: number }[] = [];
    const held = new Set<string>();
    const runningOnAgent = new Set<string>();
    for (const ref of message.attempts) {
      const key = attemptKey(ref.jobId, ref.taskIndex, ref.attempt);
      if (ref.state === "running") runningOnAgent.add(key);
      if (host.active.has(key)) held.add(key);
      else kill.push({ jobId: ref.jobId, taskIndex: ref.taskIndex, attempt: ref.attempt });
    }
    const resend: { job: JobEntry; attempt: AttemptRecord }[] = [];
    for (const [key, entry] of [...host.active]) {
      if (held.has(key)) {
        // Its "started" report may have been lost with the agent: the agent's word is enough.
        if (entry.attempt.state === "starting" && runningOnAgent.has(key)) {
          entry.attempt.state = "running";
          changes.push({ op: "putAttempt", attempt: entry.attempt });
        }
        if (entry.attempt.state === "stopping") resend.push(entry);
        else if (
          entry.attempt.state === "running" &&
          (entry.job.record.cancelRequested || entry.job.record.held)
        ) {
          resend.push(entry);
        }
        continue;
      }
      // The agent does not know this attempt (it restarted, or never got the start): it is lost.
      this.endAttempt(
        entry.job,
        entry.attempt,
        "lost",
        null,
        "the host's agent restarted without it",
        changes,
      );
    }
    await this.commit(changes);
    for (const { job, attempt } of resend) this.resendStop(job, attempt);
    this.kick();
    return { kill };
  }

  heartbeat(name: string, facts: HostFacts, progress: HeartbeatMessage["progress"] = []): void {
    const host = this.hosts.get(name);
    if (!host) return;
    host.record.lastSeen = this.now();
    host.record.facts = facts;
    // Progress is a hint for estimates, not state: kept in memory, not committed.
    for (const report of progress) {
      const active = host.active.get(attemptKey(report.jobId, report.taskIndex, report.attempt));
      if (active) active.job.progress.set(report.taskIndex, { fraction: report.fraction, at: this.now() });
    }
  }

  /** Any message from the agent renews its lease. */
  touch(name: string): void {
    const host = this.hosts.get(name);
    if (host) host.record.lastSeen = this.now();
  }

  detachHost(name: string): void {
    const host = this.hosts.get(name);
    if (host) host.connected = false;
  }

  hasAttempt(jobId: string, taskIndex: number, number: number): boolean {
    return !!this.jobs.get(jobId)?.attempt(taskIndex, number);
  }

  /** Whether an attempt is the current one of its task and not ended (fencing). */
  isCurrent(jobId: string, taskIndex: number, number: number): boolean {
    const job = this.jobs.get(jobId);
    const attempt = job?.attempt(taskIndex, number);
    return !!attempt && attempt.state !== "ended" && job!.tasks[taskIndex].attempts === number;
  }

  async attemptStarted(hostName: string, jobId: string, taskIndex: number, number: number): Promise<void> {
    const job = this.jobs.get(jobId);
    const attempt = job?.attempt(taskIndex, number);
    if (!job || !attempt || attempt.host !== hostName || attempt.state !== "starting") return;
    attempt.state = "running";
    await this.commit([{ op: "putAttempt", attempt }]);
  }

  async attemptEnded(hostName: string, report: EndedEvent): Promise<void> {
    const job = this.jobs.get(report.jobId);
    const attempt = job?.attempt(report.taskIndex, report.attempt);
    // Fencing: a report of an attempt that is over (lost, replaced) changes nothing.
    if (!job || !attempt || attempt.host !== hostName || attempt.state === "ended") return;
    let outcome: AttemptOutcome = report.outcome;
    let reason = report.reason;
    if (outcome === "succeeded") {
      const missing = job.record.spec.outputs.filter((path) => !report.outputs.includes(path));
      if (missing.length) {
        outcome = "failed";
        reason = `output file${missing.length > 1 ? "s" : ""} missing: ${missing.join(", ")}`;
      }
    }
    const changes: Change[] = [];
    this.endAttempt(job, attempt, outcome, report.exitCode, reason, changes);
    const committed = this.commit(changes);
    // The freed slot can be planned now: a placement commits after this end (commits keep their
    // order), and its start is sent only once committed.
    this.kick();
    await committed;
  }

  // ---- internals

  private endAttempt(
    job: JobEntry,
    attempt: AttemptRecord,
    outcome: AttemptOutcome,
    exitCode: number | null,
    reason: string | null,
    changes: Change[],
  ): void {
    const now = this.now();
    attempt.state = "ended";
    attempt.outcome = outcome;
    attempt.exitCode = exitCode;
    attempt.reason = reason;
    attempt.endedAt = now;
    this.deactivate(attempt);
    job.progress.delete(attempt.taskIndex);
    changes.push({ op: "putAttempt", attempt });
    const task = job.tasks[attempt.taskIndex];
    if (task.attempts !== attempt.number || isEndedState(task.state)) {
      this.refreshJobState(job, changes);
      return;
    }
    const next = taskAfterAttempt(
      task,
      { number: attempt.number, outcome, reason },
      job.record.spec.retry,
      now,
      this.random(),
    );
    // A task of a job being cancelled does not go round again.
    const state = job.record.cancelRequested && next.state === "pending" ? "cancelled" : next.state;
    task.failures = next.failures;
    task.losses = next.losses;
    task.notBefore = next.notBefore;
    task.resultAttempt = next.resultAttempt;
    job.setTaskState(task, state);
    if (state === "pending" && task.notBefore !== null) this.backingOff.add(task);
    changes.push({ op: "putTasks", tasks: [task] });
    const single = job.tasks.length === 1;
    if (outcome !== "succeeded" || single) {
      const exit = exitCode === null ? "" : ` (exit ${exitCode})`;
      const who = single ? "" : `task ${task.index} `;
      changes.push({
        op: "addEvent",
        event: this.event(
          job,
          `attempt.${outcome}`,
          `${who}attempt ${attempt.number} on ${attempt.host} ${outcome}${exit}: ${next.note}`,
        ),
      });
    }
    this.refreshJobState(job, changes);
  }

  private refreshJobState(job: JobEntry, changes: Change[]): void {
    const state = deriveJobState({
      counts: job.counts,
      held: job.record.held,
      dependenciesMet: this.dependenciesMet(job.record.spec),
    });
    if (state === job.record.state) return;
    const from = job.record.state;
    job.record.state = state;
    if (isEndedState(state)) job.record.endedAt = this.now();
    changes.push({ op: "putJob", job: job.record });
    changes.push({ op: "addEvent", event: this.event(job, "state", `${from} -> ${state}`) });
    this.events.emit("job", job);
    if (isEndedState(state)) this.releaseDependents(job, changes);
  }

  private dependenciesMet(spec: JobSpec): boolean {
    return spec.dependsOn.every((id) => this.jobs.get(id)?.record.state === "succeeded");
  }

  /** A job that ended may let waiting jobs go, or, if it did not succeed, fail them. */
  private releaseDependents(ended: JobEntry, changes: Change[]): void {
    for (const job of this.jobs.values()) {
      if (job.record.state !== "waiting" || !job.record.spec.dependsOn.includes(ended.id)) continue;
      const dirty: TaskRecord[] = [];
      if (ended.record.state === "succeeded") {
        if (!this.dependenciesMet(job.record.spec)) continue;
        for (const task of job.tasks) {
          if (task.state === "waiting") {
            job.setTaskState(task, "pending");
            dirty.push(task);
          }
        }
        changes.push({ op: "addEvent", event: this.event(job, "dependencies", "dependencies succeeded") });
      } else {
        for (const task of job.tasks) {
          if (task.state === "waiting") {
            job.setTaskState(task, "failed");
            dirty.push(task);
          }
        }
        changes.push({
          op: "addEvent",
          event: this.event(job, "dependencies", `dependency ${ended.id} ended ${ended.record.state}`),
        });
      }
      changes.push({ op: "putTasks", tasks: dirty });
      this.refreshJobState(job, changes);
    }
    this.kick();
  }

  private activate(job: JobEntry, attempt: AttemptRecord): void {
    const host = this.hosts.get(attempt.host);
    if (!host) return;
    host.active.set(attemptKey(job.id, attempt.taskIndex, attempt.number), { job, attempt });
    host.usedSlots += job.cpus;
    host.usedMemoryMb += job.memoryMb;
  }

  private deactivate(attempt: AttemptRecord): void {
    const host = this.hosts.get(attempt.host);
    const key = attemptKey(attempt.jobId, attempt.taskIndex, attempt.number);
    const entry = host?.active.get(key);
    if (!host || !entry) return;
    host.active.delete(key);
    host.usedSlots -= entry.job.cpus;
    host.usedMemoryMb -= entry.job.memoryMb;
  }

  private event(job: JobEntry, kind: string, message: string): EventRecord {
    return { jobId: job.id, at: this.now(), kind, message };
  }

  private async commit(changes: Change[]): Promise<void> {
    if (changes.length === 0) return;
    await this.committer.push(changes);
    for (const change of changes) if (change.op === "addEvent") this.events.emit("event", change.event);
  }

  /** Asks for a scheduling pass soon; passes never overlap and run after the current event. */
  kick(): void {
    if (this.schedulePending || this.stopped) return;
    this.schedulePending = true;
    setImmediate(() => {
      this.schedulePending = false;
      this.schedulePass();
    });
  }

  private hostViews(): HostView[] {
    return [...this.hosts.values()].map((host) => ({
      name: host.record.name,
      state: host.record.state,
      connected: host.connected,
      slots: host.record.slots,
      slotsFree: host.record.slots - host.usedSlots,
      memoryFreeMb: host.record.facts.memoryMb - host.usedMemoryMb,
      facts: { ...host.record.facts, slotsFree: Math.max(0, host.record.slots - host.usedSlots) },
    }));
  }

  private schedulePass(): void {
    const now = this.now();
    const hosts = this.hostViews();
    // Nothing can be placed without a free slot: spare the queue's sort (a submit kicks a pass).
    if (!hosts.some((host) => host.state === "ready" && host.connected && host.slotsFree > 0)) return;
    const queue: JobEntry[] = [];
    for (const job of this.jobs.values()) {
      if (job.pending.size > 0 && !job.record.held && !job.record.cancelRequested) queue.push(job);
    }
    if (queue.length === 0) return;
    queue.sort(compareQueueOrder);
    const plan = schedule({ now, jobs: queue, hosts });
    if (plan.placements.length === 0) return;
    const changes: Change[] = [];
    const starts: { job: JobEntry; attempt: AttemptRecord }[] = [];
    const touched = new Set<JobEntry>();
    for (const placement of plan.placements) {
      const job = this.jobs.get(placement.jobId)!;
      const task = job.tasks[placement.taskIndex];
      task.attempts += 1;
      task.notBefore = null;
      const attempt: AttemptRecord = {
        jobId: job.id,
        taskIndex: task.index,
        number: task.attempts,
        host: placement.host,
        state: "starting",
        outcome: null,
        reason: null,
        exitCode: null,
        restarted: task.checkpoint !== null,
        startedAt: now,
        endedAt: null,
      };
      job.setTaskState(task, "running");
      job.addAttempt(attempt);
      job.migrations.delete(task.index);
      this.activate(job, attempt);
      changes.push({ op: "putTasks", tasks: [task] }, { op: "putAttempt", attempt });
      if (attempt.number > 1) {
        const who = job.tasks.length === 1 ? "" : `task ${task.index} `;
        const from = task.checkpoint
          ? `from checkpoint generation ${task.checkpoint.generation} (${task.checkpoint.bytes} bytes)`
          : "from the beginning: no checkpoint";
        changes.push({
          op: "addEvent",
          event: this.event(
            job,
            "restart",
            `${who}attempt ${attempt.number} on ${attempt.host} restarts ${from}`,
          ),
        });
      } else if (job.tasks.length === 1) {
        changes.push({
          op: "addEvent",
          event: this.event(job, "attempt.placed", `attempt ${attempt.number} placed on ${attempt.host}`),
        });
      }
      starts.push({ job, attempt });
      touched.add(job);
    }
    for (const job of touched) this.refreshJobState(job, changes);
    this.commit(changes).then(
      () => {
        for (const { job, attempt } of starts) this.sendStart(job, attempt);
      },
      (error) => this.fatal(error),
    );
  }

  private sendStart(job: JobEntry, attempt: AttemptRecord): void {
    const spec = job.record.spec;
    this.links.send(attempt.host, {
      type: "start",
      jobId: job.id,
      taskIndex: attempt.taskIndex,
      attempt: attempt.number,
      restarted: attempt.restarted,
      command: spec.command,
      env: spec.env,
      inputs: job.record.inputs,
      outputs: spec.outputs,
      cpus: spec.resources.cpus,
      timeLimitSeconds: spec.timeLimitSeconds ?? null,
      graceSeconds: spec.checkpoint.graceSeconds,
      checkpointIntervalSeconds: spec.checkpoint.intervalSeconds,
    });
  }

  /** A stop the agent may not have had (it was away): the reason follows from the job's state. */
  private resendStop(job: JobEntry, attempt: AttemptRecord): void {
    if (job.record.cancelRequested) this.sendStop(job, attempt, "cancelled", "cancelled by user");
    else if (job.record.held) this.sendStop(job, attempt, "preempted", "held");
    else this.sendStop(job, attempt, "migrated", "migrating to another host");
  }

  private sendStop(
    job: JobEntry,
    attempt: AttemptRecord,
    outcome: "cancelled" | "preempted" | "migrated" | "lost",
    reason: string,
  ): void {
    this.links.send(attempt.host, {
      type: "stop",
      jobId: job.id,
      taskIndex: attempt.taskIndex,
      attempt: attempt.number,
      outcome,
      reason,
      graceSeconds: job.record.spec.checkpoint.graceSeconds,
    });
  }

  /** Leases: a host silent for the host timeout is lost, and its attempts with it (guarantee 3). */
  checkLeases(): void {
    const now = this.now();
    const timeoutMs = this.options.hostTimeoutSeconds * 1000;
    const changes: Change[] = [];
    for (const host of this.hosts.values()) {
      if (host.record.state === "lost" || now - host.record.lastSeen <= timeoutMs) continue;
      host.record.state = "lost";
      host.connected = false;
      // A frozen or partitioned agent may still hold its socket open: close it, so that when it
      // comes back it says hello again and is told to kill the attempts that were replaced.
      this.links.disconnect(host.record.name);
      changes.push({ op: "putHost", host: host.record });
      for (const { job, attempt } of [...host.active.values()]) {
        const silent = ((now - host.record.lastSeen) / 1000).toFixed(1);
        this.endAttempt(
          job,
          attempt,
          "lost",
          null,
          `host ${host.record.name} silent for ${silent} s`,
          changes,
        );
      }
    }
    if (changes.length)
      this.commit(changes).then(
        () => this.kick(),
        (error) => this.fatal(error),
      );
    else if (this.hasBackoffDue(now)) this.kick();
  }

  private hasBackoffDue(now: number): boolean {
    let due = false;
    for (const task of this.backingOff) {
      if (task.state !== "pending" || task.notBefore === null) this.backingOff.delete(task);
      else if (task.notBefore <= now) due = true;
    }
    return due;
  }

  private fatal(error: unknown): void {
    // The store refused a commit: the in-memory state is now ahead of the durable one, so the
    // only safe course is to stop and let a restart recover from the store.
    console.error("steward: store commit failed, exiting so that a restart recovers from the store:", error);
    process.exit(70);
  }
}

function defaultName(spec: JobSpec): string {
  const command = Array.isArray(spec.command) ? spec.command[0] : spec.command.split(/\s+/)[0];
  return (command ?? "job").split("/").pop() || "job";
}
