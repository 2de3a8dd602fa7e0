// The cluster as plain data with its indexes (HyperQueue's core.rs): jobs, hosts, live attempts,
// the queue and the tasks backing off. Handlers in reactor/handlers change it; nothing here does
// I/O or reads the clock.

import { measuredCpuSeconds } from "../../common/model/attempt-usage.ts";
import { newGangProgress } from "../../common/model/gang.ts";
import { attemptKey, hostsOf, keyOf } from "../../common/model/ids.ts";
import { DEFAULT_QOS_POLICY, type QosPolicy, tierOf } from "../../common/model/qos-file.ts";
import type {
  AttemptRecord,
  HostListing,
  JobHeader,
  PlacementEntry,
  TaskRecord,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { TaskState } from "../../common/model/states.ts";
import { attemptCpuSeconds } from "../scheduler/fair-share.ts";
import { userTierKey } from "../scheduler/qos.ts";
import type { Held, HostView, ReservedRoom, RunningUse } from "../scheduler/view.ts";
import { WALLTIME_MARGIN_SECONDS, walltimeAt } from "../scheduler/walltime.ts";
import { AttemptWatches } from "./attempt-watches.ts";
import { CacheHolders } from "./cache-holders.ts";
import { EndedJobs } from "./ended-jobs.ts";
import {
  freeCustom,
  freeGpus,
  type HostEntry,
  holdCountable,
  hostRecordNow,
  type LiveAttempt,
} from "./host-entry.ts";
import type { JobEntry } from "./job-entry.ts";
import { JobQueue } from "./job-queue.ts";
import { type FairShareSettings, OwnerUsage } from "./owner-usage.ts";
import { type HeldRoom, heldFor, type RoomReservation, RoomReservations } from "./room-reservations.ts";
import { SecretRegistry } from "./secret-registry.ts";
import { TokenRegistry } from "./token-registry.ts";

export class ClusterState {
  /** The QoS tiers and groups' limits (`--qos`): a job's tier priority is set from it as it joins. */
  readonly qos: QosPolicy;
  /** Jobs in memory with their tasks and attempts: every live job, and ended ones not yet retired. */
  readonly jobs = new Map<string, JobEntry>();
  /** Jobs that ended and left memory: their headers only (the store has the rest). */
  readonly ended = new EndedJobs();
  readonly hosts = new Map<string, HostEntry>();
  /** Every live attempt by its key: fencing looks here. */
  readonly live = new Map<string, LiveAttempt>();
  /**
   * The jobs of the live attempts, each with how many it has: a pass asks questions of the running
   * jobs (may the queue's first preempt one, may one have a replica), which are far fewer than
   * their attempts (one array's ten thousand running tasks).
   */
  readonly liveJobs = new Map<JobEntry, number>();
  readonly queue = new JobQueue();
  /** Running attempts and decayed cpu-seconds per owner, and the shares tree: fair share. */
  readonly owners: OwnerUsage;
  /** API tokens, join tokens and host credentials the server gave out. */
  readonly tokens = new TokenRegistry();
  /** Users' secrets: the S3 credentials their jobs name. */
  readonly secrets = new SecretRegistry();
  /** Every workflow by id (small, and kept whatever became of its jobs). */
  readonly workflows = new Map<string, WorkflowRecord>();
  /** The store's meta entries: small records of the broker's own (the pilots a pool submitted). */
  readonly meta = new Map<string, string>();
  /** Workflows by their owner's submit key (WorkflowRecord.submitKey): a repeated submit finds its workflow. */
  readonly workflowSubmissions = new Map<string, WorkflowRecord>();

  /** Adds a workflow with its indexes. */
  addWorkflow(workflow: WorkflowRecord): void {
    this.workflows.set(workflow.id, workflow);
    if (workflow.submitKey !== null)
      this.workflowSubmissions.set(submissionKey(workflow.owner, workflow.submitKey), workflow);
  }

  /** Takes a workflow added out again, with its indexes (a step that threw: reactor/writes.ts). */
  removeWorkflow(workflow: WorkflowRecord): void {
    this.workflows.delete(workflow.id);
    if (workflow.submitKey !== null)
      this.workflowSubmissions.delete(submissionKey(workflow.owner, workflow.submitKey));
  }
  /** When a task (job/index) was last migrated, so the rescheduler leaves it a discovery period. */
  readonly movedAt = new Map<string, number>();
  /** Room preemptions keep for the tasks they were made for, until those start (room-reservations.ts). */
  readonly reservations = new RoomReservations();
  /** Which hosts' caches hold which objects, as their heartbeats said (soft state: cache-holders.ts). */
  readonly cacheHolders = new CacheHolders();
  /** Checkpoint transfer rate observed (bytes per second), or null before any. */
  transferBytesPerSecond: number | null = null;
  /** Progress samples and requirements texts of running attempts (contracts, self-migration). */
  readonly watches = new AttemptWatches();
  /** Pending tasks waiting out a retry back-off, with the job they belong to. */
  readonly backingOff = new Map<TaskRecord, JobEntry>();
  /** The earliest notBefore in backingOff (Infinity when none). */
  nextBackoffDue = Number.POSITIVE_INFINITY;
  /** Submission order of jobs, to break ties in the queue. */
  nextSeq = 1;
  /**
   * The folders pools' pilots will share (the pools file's `shared`): a workdir in one is not
   * refused at submit, nor said to wait for a host sharing it, before a pilot has joined.
   */
  poolFolders: readonly string[] = [];

  /** Jobs by their owner's submit key (JobRecord.submitKey), so that a repeated submit finds its job. */
  readonly submissions = new Map<string, JobEntry>();

  /**
   * Jobs in memory that wait on another's tasks one by one (dependsOn with `tasks: same`), by the
   * id of the job they wait on: a task's end there looks at these only.
   */
  readonly sameTaskDependents = new Map<string, Set<JobEntry>>();

  /**
   * Jobs in memory that name a job in dependsOn (any kind), by the id of the job they name: a job's
   * end looks at these only, not at every job (a workflow's fan-in names thousands).
   */
  readonly dependents = new Map<string, Set<JobEntry>>();

  /**
   * `fairShare`: the shares tree and half-life (`--shares`, `--fair-share-half-life`); flat, 7 days by
   * default. `qos`: the QoS tiers and groups' limits (`--qos`); the one tier `normal` by default.
   */
  constructor(fairShare: Partial<FairShareSettings> = {}, qos: QosPolicy = DEFAULT_QOS_POLICY) {
    // A user the shares tree names nowhere goes under the account of their token's group.
    this.owners = new OwnerUsage({ ...fairShare, groupOf: (user) => this.tokens.groupOf(user) });
    this.qos = qos;
  }

  /** The priority of a tier under the server's QoS policy (a tier it does not name: the default tier's). */
  qosPriorityOf(qos: string): number {
    return tierOf(this.qos, qos).priority;
  }

  addJob(job: JobEntry): void {
    job.qosPriority = this.qosPriorityOf(job.qos);
    this.jobs.set(job.id, job);
    fileUnder(this.sameTaskDependents, sameTaskDependencyIds(job), job);
    fileUnder(this.dependents, dependencyIdsOf(job), job);
    const { owner, submitKey } = job.record;
    if (submitKey !== null) this.submissions.set(submissionKey(owner, submitKey), job);
    for (const index of job.delayed) this.noteBackoff(job, job.tasks[index]);
    if (job.pending.size > 0) this.queue.add(job);
  }

  removeJob(job: JobEntry): void {
    this.jobs.delete(job.id);
    takeOutFrom(this.sameTaskDependents, sameTaskDependencyIds(job), job);
    takeOutFrom(this.dependents, dependencyIdsOf(job), job);
    const { owner, submitKey } = job.record;
    if (submitKey !== null) this.submissions.delete(submissionKey(owner, submitKey));
    for (const index of job.delayed) this.backingOff.delete(job.tasks[index]);
    this.queue.delete(job);
  }

  /**
   * An ended job leaves memory, its header staying (state/job-header.ts): called once the commit
   * that ended it is durable, so a reader sent to the store finds it ended there.
   */
  retire(job: JobEntry): void {
    this.removeJob(job);
    this.ended.set(job.header);
    this.reservations.forgetJob(job.id);
    if (this.movedAt.size > 0) {
      const prefix = `${job.id}/`;
      for (const key of this.movedAt.keys()) if (key.startsWith(prefix)) this.movedAt.delete(key);
    }
  }

  /** A job's header, in memory or retired; undefined when there is no such job. */
  header(id: string): JobHeader | undefined {
    const job = this.jobs.get(id);
    return job ? job.header : this.ended.get(id);
  }

  /** A job's state, in memory or retired; undefined when there is no such job (never was, or removed). */
  jobState(id: string): JobHeader["state"] | undefined {
    return this.jobs.get(id)?.record.state ?? this.ended.get(id)?.state;
  }

  /** A job's owner, in memory or retired. */
  jobOwner(id: string): string | undefined {
    return this.jobs.get(id)?.record.owner ?? this.ended.get(id)?.owner;
  }

  /** Moves a task to a new state and keeps the queue and back-off indexes right. */
  setTaskState(job: JobEntry, task: TaskRecord, state: TaskState): void {
    job.setTaskState(task, state);
    if (state !== "pending") return;
    if (job.delayed.has(task.index)) this.noteBackoff(job, task);
    this.queue.add(job);
  }

  private noteBackoff(job: JobEntry, task: TaskRecord): void {
    this.backingOff.set(task, job);
    if (task.notBefore !== null && task.notBefore < this.nextBackoffDue) this.nextBackoffDue = task.notBefore;
  }

  /** Tasks whose back-off is over become ready; returns whether any did. */
  promoteDueBackoffs(now: number): boolean {
    if (now < this.nextBackoffDue) return false;
    let promoted = false;
    let next = Number.POSITIVE_INFINITY;
    for (const [task, job] of this.backingOff) {
      if (task.state !== "pending" || !job.delayed.has(task.index)) {
        this.backingOff.delete(task);
      } else if (task.notBefore === null || task.notBefore <= now) {
        job.promote(task);
        this.backingOff.delete(task);
        this.queue.add(job);
        promoted = true;
      } else if (task.notBefore < next) next = task.notBefore;
    }
    this.nextBackoffDue = next;
    return promoted;
  }

  /**
   * What each user (by tier) and group holds running now, for the running limits (scheduler/qos.ts);
   * null when the QoS policy sets none.
   */
  runningUse(): RunningUse | null {
    const limited =
      [...this.qos.tiers.values()].some(
        (tier) => tier.maxRunningCpus !== null || tier.maxRunningGpus !== null,
      ) ||
      [...this.qos.groups.values()].some(
        (group) => group.maxRunningCpus !== null || group.maxRunningGpus !== null,
      );
    if (!limited) return null;
    const groupOf = this.tokens.groups();
    const byUserTier = new Map<string, Held>();
    const byGroup = new Map<string, Held>();
    const add = (map: Map<string, Held>, key: string, cpus: number, gpus: number) => {
      const held = map.get(key);
      if (held) {
        held.cpus += cpus;
        held.gpus += gpus;
      } else map.set(key, { cpus, gpus });
    };
    for (const { job, attempt } of this.live.values()) {
      const ranks = hostsOf(attempt).length;
      const cpus = job.cpus * ranks;
      const gpus = (job.gpus ?? 0) * ranks;
      add(byUserTier, userTierKey(job.owner, job.qos), cpus, gpus);
      const group = groupOf.get(job.owner);
      if (group !== undefined) add(byGroup, group, cpus, gpus);
    }
    return { byUserTier, byGroup, groupOf };
  }

  /** Tasks not ended of the owner's jobs (of one tier, or every tier when `qos` is null). */
  unendedTasks(owner: string | ((owner: string) => boolean), qos: string | null): number {
    const mine = typeof owner === "string" ? (other: string) => other === owner : owner;
    let count = 0;
    for (const job of this.jobs.values())
      if (mine(job.owner) && (qos === null || job.qos === qos)) count += job.unendedTasks;
    return count;
  }

  liveAttempt(jobId: string, taskIndex: number, number: number): LiveAttempt | undefined {
    return this.live.get(attemptKey(jobId, taskIndex, number));
  }

  /** Records a live attempt on its hosts: it holds their slots and memory until it ends. */
  activate(job: JobEntry, attempt: AttemptRecord): LiveAttempt {
    const entry: LiveAttempt = { job, attempt };
    if (attempt.placement.length > 1) {
      entry.gang = newGangProgress(hostsOf(attempt));
      // A gang recovered running had every rank started.
      if (attempt.state === "running" || attempt.state === "stopping")
        for (const rank of entry.gang.ranks) rank.started = true;
    }
    this.reactivate(entry);
    return entry;
  }

  /**
   * Records a live attempt again with the entry it had (its gang's progress and what it reported
   * kept): how an end taken back (a step that threw, reactor/writes.ts) makes it live again.
   */
  reactivate(entry: LiveAttempt): void {
    const { job, attempt } = entry;
    const key = keyOf(attempt);
    if (!this.live.has(key)) this.liveJobs.set(job, (this.liveJobs.get(job) ?? 0) + 1);
    this.live.set(key, entry);
    this.owners.started(job.record.owner, job.cpus * hostsOf(attempt).length, key, attempt.startedAt);
    const memoryMb = attempt.memoryMb ?? job.memoryMb;
    for (const rank of placementOf(attempt)) {
      const host = this.hosts.get(rank.host);
      if (!host) continue;
      host.active.set(key, entry);
      host.usedSlots += job.cpus;
      host.usedMemoryMb += memoryMb;
      holdCountable(host, rank.gpus, job.custom, 1);
    }
  }

  /** An attempt ends or goes: its hosts' room is free again. Returns its entry, if it was live. */
  deactivate(attempt: AttemptRecord): LiveAttempt | undefined {
    const key = keyOf(attempt);
    const entry = this.live.get(key);
    if (!entry) return undefined;
    this.live.delete(key);
    const left = (this.liveJobs.get(entry.job) ?? 1) - 1;
    if (left > 0) this.liveJobs.set(entry.job, left);
    else this.liveJobs.delete(entry.job);
    this.watches.forget(key);
    const cpus = entry.job.cpus * hostsOf(attempt).length;
    this.owners.stopped(entry.job.record.owner, cpus, key);
    if (attempt.endedAt !== null)
      this.owners.used(
        entry.job.record.owner,
        attemptCpuSeconds(cpus, attempt.startedAt, attempt.endedAt, measuredCpuSeconds(attempt.usage)),
        attempt.endedAt,
      );
    // A host with several ranks of a gang gives back each rank's share.
    const memoryMb = attempt.memoryMb ?? entry.job.memoryMb;
    for (const rank of placementOf(attempt)) {
      const host = this.hosts.get(rank.host);
      if (!host?.active.has(key)) continue;
      host.usedSlots -= entry.job.cpus;
      host.usedMemoryMb -= memoryMb;
      holdCountable(host, rank.gpus, entry.job.custom, -1);
    }
    for (const name of hostsOf(attempt)) this.hosts.get(name)?.active.delete(key);
    return entry;
  }

  /**
   * Whether a reservation can still be used: its task waits, ready, in a job that may start, and
   * its host takes work. One that cannot holds no room (and a pass drops it).
   */
  reservationHolds(reservation: RoomReservation): boolean {
    const job = this.jobs.get(reservation.jobId);
    if (!job?.schedulable || !job.ready.has(reservation.taskIndex)) return false;
    if (job.tasks[reservation.taskIndex]?.state !== "pending") return false;
    const host = this.hosts.get(reservation.host);
    return host?.record.state === "ready" && host.connected;
  }

  /** Forgets reservations that can no longer be used (reservationHolds). */
  dropStaleReservations(): void {
    if (this.reservations.size === 0) return;
    for (const reservation of [...this.reservations.values()])
      if (!this.reservationHolds(reservation))
        this.reservations.delete(reservation.jobId, reservation.taskIndex);
  }

  /** What the host holds now for one reservation (room-reservations.ts). */
  heldFor(reservation: RoomReservation): HeldRoom {
    const stopped = this.live.get(reservation.stopped);
    const memoryMb = stopped ? (stopped.attempt.memoryMb ?? stopped.job.memoryMb) : 0;
    return heldFor(reservation, stopped ? { slots: stopped.job.cpus, memoryMb } : null);
  }

  /** Room held on each host for tasks other than `except` (job, task), by host name. */
  heldRoom(except?: { jobId: string; taskIndex: number }): Map<string, HeldRoom> {
    const held = new Map<string, HeldRoom>();
    for (const reservation of this.reservations.values()) {
      if (except && reservation.jobId === except.jobId && reservation.taskIndex === except.taskIndex)
        continue;
      if (!this.reservationHolds(reservation)) continue;
      const room = this.heldFor(reservation);
      const sum = held.get(reservation.host) ?? { slots: 0, memoryMb: 0 };
      held.set(reservation.host, { slots: sum.slots + room.slots, memoryMb: sum.memoryMb + room.memoryMb });
    }
    return held;
  }

  /** The room free on a host for a task: what its attempts leave, less what is kept for other tasks. */
  roomFor(hostName: string, jobId: string, taskIndex: number): HeldRoom {
    const host = this.hosts.get(hostName);
    if (!host) return { slots: 0, memoryMb: 0 };
    const held = this.reservations.size > 0 ? this.heldRoom({ jobId, taskIndex }).get(hostName) : undefined;
    return {
      slots: host.record.slots - host.usedSlots - (held?.slots ?? 0),
      memoryMb: host.facts.memoryMb - host.usedMemoryMb - (held?.memoryMb ?? 0),
    };
  }

  /** The reservations that hold, as the scheduler sees them (placed first once their room is free). */
  reservedRooms(): ReservedRoom[] {
    const rooms: ReservedRoom[] = [];
    for (const reservation of this.reservations.values()) {
      if (!this.reservationHolds(reservation)) continue;
      const held = this.heldFor(reservation);
      rooms.push({
        job: this.jobs.get(reservation.jobId)!,
        taskIndex: reservation.taskIndex,
        host: reservation.host,
        held: { slots: held.slots, memoryMb: held.memoryMb },
      });
    }
    return rooms;
  }

  hostList(): HostListing[] {
    return [...this.hosts.values()].map((host) => ({
      ...hostRecordNow(host),
      slotsFree: Math.max(0, host.record.slots - host.usedSlots),
      connected: host.connected,
      liveAttempts: host.active.size,
    }));
  }

  /**
   * The hosts as the scheduler sees them at `now`; pilots stop taking work `marginSeconds` before
   * their walltime. Room kept by a preemption is not free (the pass gives it to its task alone).
   */
  hostViews(now: number, marginSeconds: number = WALLTIME_MARGIN_SECONDS): HostView[] {
    const held = this.reservations.size > 0 ? this.heldRoom() : null;
    return [...this.hosts.values()].map((host) => {
      const walltime = walltimeAt(host.record.endsAt, now, marginSeconds);
      const kept = held?.get(host.record.name);
      const slotsFree = host.record.slots - host.usedSlots - (kept?.slots ?? 0);
      return {
        name: host.record.name,
        state: host.record.state,
        connected: host.connected,
        slots: host.record.slots,
        slotsFree,
        memoryFreeMb: host.facts.memoryMb - host.usedMemoryMb - (kept?.memoryMb ?? 0),
        // Undefined rather than absent: every view has one shape (spreads here slowed each pass).
        gpusFree: host.facts.gpus?.length ? freeGpus(host).length : undefined,
        customFree: host.facts.resources ? freeCustom(host) : undefined,
        facts: {
          ...host.facts,
          slotsFree: Math.max(0, slotsFree),
          secondsLeft: walltime ? walltime.secondsLeft : Number.POSITIVE_INFINITY,
        },
        ...(walltime ? { walltime } : {}),
      };
    });
  }

  /** Whether any host could take work now: without one, a pass has nothing to do. */
  hasFreeSlot(): boolean {
    for (const host of this.hosts.values()) {
      if (host.record.state === "ready" && host.connected && host.record.slots - host.usedSlots > 0)
        return true;
    }
    return false;
  }
}

/** An attempt's ranks with their hosts (an attempt recorded before placements: its one host). */
function placementOf(attempt: AttemptRecord): PlacementEntry[] {
  return attempt.placement.length > 0 ? attempt.placement : [{ host: attempt.host, rank: 0 }];
}

/** The ids a job's dependsOn names, each once. */
function dependencyIdsOf(job: JobEntry): Set<string> {
  const ids = new Set<string>();
  for (const entry of job.record.spec.dependsOn) ids.add(typeof entry === "string" ? entry : entry.job);
  return ids;
}

/** The jobs a job waits on task by task (`tasks: same`). */
function sameTaskDependencyIds(job: JobEntry): string[] {
  const ids: string[] = [];
  for (const entry of job.record.spec.dependsOn)
    if (typeof entry !== "string" && entry.tasks === "same") ids.push(entry.job);
  return ids;
}

/** Files the job under each id in an index of jobs by the id they name (the dependents' indexes). */
function fileUnder(index: Map<string, Set<JobEntry>>, ids: Iterable<string>, job: JobEntry): void {
  for (const id of ids) {
    let jobs = index.get(id);
    if (!jobs) {
      jobs = new Set();
      index.set(id, jobs);
    }
    jobs.add(job);
  }
}

/** Takes the job out from under each id of such an index; an id left with no job goes. */
function takeOutFrom(index: Map<string, Set<JobEntry>>, ids: Iterable<string>, job: JobEntry): void {
  for (const id of ids) {
    const jobs = index.get(id);
    jobs?.delete(job);
    if (jobs?.size === 0) index.delete(id);
  }
}

/** The submissions index's key: a submit key counts within its owner's jobs. */
export function submissionKey(owner: string, key: string): string {
  return `${owner}\u0000${key}`;
}
