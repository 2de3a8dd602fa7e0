// The read-only view of the state that the scheduler is handed (Nomad's "state + planner"), with the
// policy, a gang's needs, a pilot's walltime and the QoS use it is handed along (policy.ts,
// stages/gang.ts, walltime.ts and qos.ts re-export them: this file imports none of the scheduler's
// others, so none of them makes a cycle through it); the plan it returns is in plan.ts. The server builds the view; tests build it from tables. No I/O, no clock:
// `now` is passed in.

import type { CompiledExpression } from "../../common/model/cel.ts";
import type { JobEvent } from "../../common/model/events.ts";
import type { HostFacts } from "../../common/model/host-facts.ts";
import type { QosPolicy } from "../../common/model/qos-file.ts";
import type { StopIntent } from "../../common/model/records.ts";
import type { HostState } from "../../common/model/states.ts";
import type { AttemptProgress } from "./estimate.ts";
import type { OwnerShare } from "./fair-share.ts";

/** A ready task with a placement rule of its own (a migration names or avoids a host). */
export interface ConstrainedTask {
  index: number;
  allows(host: string): boolean;
  /** Why the task waits when no host it allows takes it (what the pass traces as `unplaced`). */
  waitReason?: string;
  /** When the rule lapses and any host may take it (migration-rule.ts): a pass looks again then. */
  lapsesAt?: number;
}

export interface JobView {
  id: string;
  priority: number;
  createdAt: number;
  /** Submission order, to break ties between jobs created in the same millisecond. */
  seq: number;
  /** Who submitted the job: owners of one QoS band take turns by fair share. Absent: one anonymous owner. */
  owner?: string;
  /** The job's QoS tier (qos.ts); absent: the default tier. */
  qos?: string;
  /** Its tier's priority: the band the job is in between users (queue-order.ts); absent: 0. */
  qosPriority?: number;
  cpus: number;
  memoryMb: number;
  /** GPUs one task (one rank) takes; absent: none. */
  gpus?: number;
  /** Units of countable resources one task (one rank) takes, by name; absent: none. */
  custom?: Readonly<Record<string, number>>;
  /** A task's memory when it is not the job's (grown after running out of memory); absent or undefined: the job's. */
  taskMemoryMb?(taskIndex: number): number | undefined;
  requirements: CompiledExpression | null;
  rank: CompiledExpression | null;
  /** The job file's `workdir`: it runs in place, on hosts sharing a folder that holds it (stages/feasibility.ts); absent: anywhere. */
  workdir?: string;
  /**
   * What the job needs its host's agent to move itself (model/transfers.ts: s3: inputs, outputs
   * pushed to a URL): only hosts whose `transfers` fact has each take it; absent or empty: any host.
   */
  transfers?: readonly string[];
  /** The container image it runs in (stages/feasibility.ts: only hosts with a container runtime); absent: none. */
  container?: ContainerNeeds;
  /** Hosts where the job broke its performance contract: ranked after all others (contracts.ts). */
  slowHosts?: readonly string[];
  /**
   * The SHA-256 digests known of the job's inputs (uploaded ones', URL ones' `sha256`), each once:
   * hosts whose cache holds more of their bytes rank first among equals (data-affinity.ts); absent
   * or empty: none known.
   */
  inputDigests?: readonly string[];
  /** Tasks that may start at `now` with no rule of their own, in the order they should start. */
  readyTasks(now: number): Iterable<number>;
  /** Tasks that may start at `now` but only on some hosts; absent means none. */
  constrainedTasks?(now: number): Iterable<ConstrainedTask>;
  /** How long a task is expected to run (timeLimitSeconds, else earlier tasks' time), for pilots' walltimes. */
  expectedSeconds?: number | null;
  /** Whether the job's tasks checkpoint (one has): it may start on a pilot that ends before it would. */
  readonly checkpoints?: boolean;
  /** A multi-node job: its one task's attempt is a gang of ranks on as many hosts (stages/gang.ts); absent: one host. */
  gang?: Omit<GangNeeds, "cpus" | "memoryMb" | "gpus" | "custom" | "restartPool" | "nodesPerHost"> & {
    /** Ranks one host may run. */
    nodesPerHost: number;
    /** The job's own restart pool; null: the server's (MetaschedulingPolicy.restartPool). */
    restartPool: string | null;
  };
  /** Since when the job's work has waited to start (a gang's reserve time counts from it); absent: createdAt. */
  readySince?: number;
  /** At most this many tasks of the array may hold slots at once (`array.parallel`, stages/throttle.ts); absent: no limit. */
  parallel?: number;
  /** Tasks of the job with a live attempt now (starting, running or stopping); absent: 0. */
  liveTasks?: number;
  /** Attempts one task may run at once (`replicas: k`, stages/replicas.ts); absent means 1. */
  replicas?: number;
  /** Whether a task with `live` attempts may have one more replica; absent: while live < replicas. */
  mayReplicate?(taskIndex: number, live: number): boolean;
}

/** What a job in a container needs of a host: a container runtime, and these host paths in its shared folders. */
export interface ContainerNeeds {
  image: string;
  hostPaths: readonly string[];
}

/** A running task of a job with replicas: where its live attempts run (stages/replicas.ts). */
export interface RunningTask {
  job: JobView;
  taskIndex: number;
  /** The hosts of its live attempts. */
  hosts: readonly string[];
}

/** A live attempt as the scheduler sees it, for preemption and rescheduling. */
export interface RunningTaskView {
  job: Pick<
    JobView,
    | "id"
    | "priority"
    | "cpus"
    | "memoryMb"
    | "gpus"
    | "custom"
    | "requirements"
    | "workdir"
    | "transfers"
    | "container"
    | "rank"
    | "owner"
    | "qos"
    | "qosPriority"
  >;
  taskIndex: number;
  attempt: number;
  host: string;
  /** Already being stopped (its slot is about to free). */
  stopping: boolean;
  progress: AttemptProgress;
  /** Size of the task's last committed checkpoint, or null when it has none. */
  checkpointBytes: number | null;
  /** Placed in room a preemption made: not preempted in turn (GrADS). */
  startedByPreemption: boolean;
  /** When the rescheduler last moved this task, or null. */
  lastMovedAt: number | null;
}

export interface HostView {
  name: string;
  state: HostState;
  /** Whether the agent is connected now: a host that is not reachable gets no new work. */
  connected: boolean;
  slots: number;
  slotsFree: number;
  /** Memory the host offers for placement, less what placed attempts reserve. */
  memoryFreeMb: number;
  /** GPUs its agent declares that no live attempt holds; absent: none. */
  gpusFree?: number;
  /** Units of its agent's countable resources that no live attempt holds, by name; absent: none. */
  customFree?: Record<string, number>;
  facts: HostFacts;
  /** A pilot's walltime (scheduler/walltime.ts); absent for hosts without one. */
  walltime?: Walltime;
}

/** One owner's queued jobs with ready work, in queue order, read one at a time. */
export interface OwnerQueue {
  owner: string;
  /** The owner's next job, or null when none is left. */
  peek(): JobView | null;
  advance(): void;
}

export interface SchedulerState {
  now: number;
  /** Jobs with ready tasks, in queue order (see compareQueueOrder); read as far as a stage needs. */
  jobs: Iterable<JobView>;
  /**
   * The same jobs, each owner's in queue order (state/job-queue.ts keeps them so): a pass reads each
   * owner's first jobs only. Absent: made from `jobs`.
   */
  ownerQueues?: () => OwnerQueue[];
  hosts: readonly HostView[];
  /** Each owner's fair-share factor, cpus running and recent use (fair-share.ts); an owner not named has none (factor 1). */
  owners?: ReadonlyMap<string, OwnerShare>;
  /** The QoS tiers and groups' limits (qos.ts); absent: the one tier `normal`, no limits. */
  qos?: QosPolicy;
  /** What users and groups hold running now, for the running limits of the tiers and groups (qos.ts); absent: nothing. */
  runningUse?: RunningUse;
  /** The live attempts, asked for only when preemption or rescheduling may act (absent: neither runs). */
  running?: () => readonly RunningTaskView[];
  /** Preemption and rescheduling settings; absent fields take the papers' defaults. */
  policy?: Partial<MetaschedulingPolicy>;
  /** Running tasks that may be given a replica on an idle slot; absent means none. */
  replicable?: readonly RunningTask[];
  /** Room preemptions keep for tasks that have not started yet (plan.ts); absent means none. */
  reserved?: readonly ReservedRoom[];
  /** What the hosts' content caches hold (data-affinity.ts); absent: nothing known. */
  cached?: CachedObjects;
}

/**
 * By SHA-256 digest, the hosts whose content cache holds the object, with its size in bytes there
 * (state/cache-holders.ts keeps it from the agents' heartbeats); a digest no host holds is absent.
 */
export type CachedObjects = ReadonlyMap<string, ReadonlyMap<string, number>>;

/**
 * Room a preemption keeps on a host for one task (state/room-reservations.ts). The host's
 * `slotsFree` and `memoryFreeMb` already leave out what is held: only this task may use it.
 */
export interface ReservedRoom {
  job: JobView;
  taskIndex: number;
  host: string;
  /** What the host holds for the task now (nothing more while the stopped task still runs there). */
  held: { slots: number; memoryMb: number };
}

/** Stop a live attempt, which then ends with the intent's outcome and reason. */
export interface StopEntry {
  jobId: string;
  taskIndex: number;
  attempt: number;
  intent: StopIntent;
  /** The event that tells why, with the numbers behind the decision (scheduler's stops). */
  note?: JobEvent;
  /**
   * For a migration: where the task's next attempt may go (a named host, or null for anywhere but
   * the attempt's host). Recorded on the task with the stop (TaskRecord.migration).
   */
  migrateTo?: { to: string | null };
}

/** What a pass tells of its reasons as it goes (explain's dry run); a real pass has none. */
export interface PassTrace {
  /** The job's turn came in the queue's walk (it may still place nothing: then `unplaced` says why). */
  turn?(job: JobView): void;
  /** The pass gave up on the job's next task, and why. */
  unplaced?(job: JobView, why: string): void;
  /** Preemption looked at the job and stops nothing for it now, and why. */
  noPreemption?(job: JobView, why: string): void;
  /** Rescheduling weighed a movable task: the gain it would see on each host that could take it (none: no host fast enough). */
  rescheduling?(task: RunningTaskView, estimates: { host: string; gain: number }[]): void;
}

/** The metascheduling settings; policy.ts holds their defaults (the papers' values). */
export interface MetaschedulingPolicy {
  /** Whether a higher-priority task may stop a lower one (off: it waits). */
  preempt: boolean;
  preemptWaitSeconds: number;
  preemptMinProgress: number;
  /** Whether running tasks move to better hosts. */
  reschedule: boolean;
  rescheduleGain: number;
  discoverySeconds: number;
  minRemainingFraction: number;
  /** Observed checkpoint transfer rate (bytes per second). */
  transferBytesPerSecond: number;
  /** Pilots take no work, and their tasks move, this long before their walltime (scheduler/walltime.ts). */
  walltimeMarginSeconds: number;
  /** A gang waiting longer than this gets hosts reserved as they free up (stages/gang.ts). */
  gangReserveSeconds: number;
  /** The pool kept for replacing failed ranks of multi-node jobs (`--restart-pool`), unless a job names its own. */
  restartPool: string | null;
}

/** Cpus and GPUs held by running attempts. */
export interface Held {
  cpus: number;
  gpus: number;
}

/** What users and groups hold running now (every rank of a gang counted). */
export interface RunningUse {
  /** By userTierKey(owner, qos). */
  byUserTier: ReadonlyMap<string, Held>;
  byGroup: ReadonlyMap<string, Held>;
  /** Each user's group (a token's `--group`); a user not named has none. */
  groupOf: ReadonlyMap<string, string>;
}

/** What gang placement needs of a multi-node job. */
export interface GangNeeds {
  /** Ranks. */
  nodes: number;
  /** Ranks one host may run (absent: 1). */
  nodesPerHost?: number;
  /** Per rank. */
  cpus: number;
  memoryMb: number;
  /** GPUs and countable resources each rank takes (absent: none). */
  gpus?: number;
  custom?: Readonly<Record<string, number>>;
  /** The pool kept for replacements (`restartPool` or the server's `--restart-pool`), or null. */
  restartPool: string | null;
  /**
   * A restart after a failed rank: the host each rank goes back to (rank order), or null for the
   * rank that needs a replacement; absent for a first placement.
   */
  previous?: readonly (string | null)[];
  /** Hosts a replacement may not go to (the failed rank's). */
  avoid?: readonly string[];
}

/** What the scheduler knows of a host's walltime. */
export interface Walltime {
  /** Seconds until the walltime ends. */
  secondsLeft: number;
  /** The margin: this long before the end, the host takes no work and its tasks move. */
  marginSeconds: number;
}
