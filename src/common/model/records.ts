// The durable records: what the store keeps and what the server recovers from at start.
// Times are milliseconds since the epoch; the API turns them into ISO-8601.

import type { AttemptUsage } from "./attempt-usage.ts";
import type { HostFacts } from "./host-facts.ts";
import type { JobSpec } from "./job-spec.ts";
import type { TaskCounts } from "./job-state.ts";
import type { SecretValue } from "./secret-value.ts";
import type {
  AccountingOutcome,
  AttemptOutcome,
  AttemptState,
  HostState,
  JobState,
  StopOutcome,
  TaskState,
} from "./states.ts";
import type { StopReason } from "./stop-reasons.ts";

export interface JobRecord {
  id: string;
  name: string;
  owner: string;
  state: JobState;
  priority: number;
  /** Whether a user holds the job; kept apart from `state` so release knows where to go back to. */
  held: boolean;
  /** Cancel was asked: no task starts again, running attempts are being stopped. */
  cancelRequested: boolean;
  createdAt: number;
  endedAt: number | null;
  /** The job file as validated at submit, with defaults filled in. */
  spec: JobSpec;
  /** Input file names (relative paths) stored in the blob store under the job. */
  inputs: string[];
  /**
   * The SHA-256 of each of `inputs` (hex, by path), computed as the server stored them: sent to the
   * agents with each start, so that they take an input from their cache without asking for its
   * digest, and the scheduler prefers hosts whose content cache holds them (scheduler/data-affinity.ts).
   * Null for a job submitted to an earlier version (its agents ask the server per input, and its
   * uploaded inputs count for no host).
   */
  inputDigests: Record<string, string> | null;
  /**
   * Requirements the running job wrote into $STEWARD_REQUIREMENTS_FILE (GridWay's self-migration):
   * they replace spec.requirements for its later placements. Null until it writes valid ones.
   */
  dynamicRequirements: string | null;
  /** Hosts where the job broke its performance contract: ranked after the others for this job. */
  slowHosts: string[];
  /**
   * The key the client sent with the submit (Idempotency-Key), or null: a submit sent again with
   * the same key by the same owner answers the job it created, so a client may repeat a submit
   * whose answer it lost.
   */
  submitKey: string | null;
  /** The workflow the job was made in, and its name there; null for a job submitted alone. */
  workflow: WorkflowRef | null;
}

/** A job's place in a workflow: the workflow's id and the job's name in it. */
export interface WorkflowRef {
  id: string;
  name: string;
}

/**
 * A workflow (model/workflow.ts): its jobs by name with the edges between them, as made at submit.
 * Its jobs' states are their own; the workflow keeps only who they are and how they wait.
 */
export interface WorkflowRecord {
  id: string;
  /** The workflow file's `name`, or null. */
  name: string | null;
  owner: string;
  createdAt: number;
  /** In the order they were made: each after the jobs it depends on. */
  jobs: WorkflowMember[];
  /** The client's Idempotency-Key, or null: the same submit again answers this workflow. */
  submitKey: string | null;
}

export interface WorkflowMember {
  name: string;
  /** The job's id. */
  job: string;
  dependsOn: { name: string; when: "succeeded" | "ended" | "failed"; sameTasks: boolean }[];
}

/**
 * A job's header (broker/state/job-header.ts): what the server keeps in memory of a job that has ended,
 * and what it reads of one at start instead of its tasks and attempts.
 */
export interface JobHeader {
  readonly id: string;
  readonly name: string;
  readonly owner: string;
  readonly state: JobState;
  readonly priority: number;
  readonly createdAt: number;
  readonly endedAt: number | null;
  readonly taskCount: number;
  readonly counts: TaskCounts;
  /** The job's QoS tier (spec.qos). */
  readonly qos: string;
}

/** A job as its summary shows it: its header (state, counts) and its record (job file, workflow). */
export interface JobHead {
  header: JobHeader;
  record: JobRecord;
}

/**
 * Cpu time of ended attempts, summed by owner and minute of their end: fair share's history as the
 * store hands it over at start, instead of every attempt that ever ended. Each attempt counts as
 * broker/scheduler/fair-share.ts's attemptCpuSeconds says: measured where measured, else held.
 */
export interface UsageSample {
  owner: string;
  /** The minute they ended in (ms since the epoch). */
  endedAt: number;
  /** Their cpu-seconds added up. */
  cpuSeconds: number;
}

export interface CheckpointInfo {
  generation: number;
  bytes: number;
  at: number;
}

/** One file of a committed checkpoint: where it goes in the folder, and the object that holds it. */
export interface CheckpointFile {
  path: string;
  sha256: string;
  bytes: number;
}

/** The checkpoint a restarted attempt starts from: its files, and a multi-node job's rank and generation. */
export interface RestartManifest {
  files: CheckpointFile[];
  gang?: { rank: number; generation: number };
}

/**
 * One committed checkpoint manifest: a single-host task's generation, or one rank's part of a
 * multi-node task's generation (a generation counts once every rank has its part). The files'
 * objects are blobs named by their SHA-256; the parts are records, so which generations exist,
 * which is complete and which go is known without listing blobs.
 */
export interface CheckpointPart {
  jobId: string;
  taskIndex: number;
  /** The rank of a multi-node job; 0 for a single-host task. */
  rank: number;
  generation: number;
  /** The attempt that committed it. */
  attempt: number;
  files: CheckpointFile[];
  /** The files' bytes added up. */
  bytes: number;
  at: number;
}

export interface TaskRecord {
  jobId: string;
  index: number;
  state: TaskState;
  /** Attempts started so far; the next attempt's number is attempts + 1. */
  attempts: number;
  /** Attempts ended by an application failure (non-zero exit, time limit): they use up retry.maxAttempts. */
  failures: number;
  /** Attempts ended lost with their host: a task lost too often is failed as poison. */
  losses: number;
  /** Attempts ended by a system failure that is not the host's: inputs that could not be staged, a start never delivered. */
  systemFailures: number;
  /** Earliest time the next attempt may start (retry back-off), or null. */
  notBefore: number | null;
  /** The attempt whose outputs are the task's committed result (guarantee 4), or null. */
  resultAttempt: number | null;
  checkpoint: CheckpointInfo | null;
  /** Recorded intent of a migration: where the task's next attempt may go, or null. */
  migration: MigrationIntent | null;
  /** The memory the task's next attempts take, MB, grown after running out of memory (retry.memoryGrowth); null: the job's. */
  memoryMb: number | null;
}

/** A migration's target: a named host, or anywhere but the host the task left. */
export interface MigrationIntent {
  to: string | null;
  from: string;
}

/** One host of an attempt's placement: one entry for a single-host attempt, one per rank for a gang. */
export interface PlacementEntry {
  host: string;
  rank: number;
  /** The GPU device ids of the host given to this rank (absent: none), never to another live attempt. */
  gpus?: string[];
}

/**
 * Recorded intent of a stop: the outcome and reason the attempt ends with once it has stopped. An
 * earlier version stored the reason as text (store/schema.ts reads it with reasonFromText).
 */
export interface StopIntent {
  outcome: StopOutcome;
  reason: StopReason;
}

export interface AttemptRecord {
  jobId: string;
  taskIndex: number;
  number: number;
  /** The host of rank 0 (placement[0].host), kept for the JSON shape and for queries. */
  host: string;
  /** Where the attempt runs, rank by rank (one entry today). */
  placement: PlacementEntry[];
  state: AttemptState;
  outcome: AttemptOutcome | null;
  reason: string | null;
  exitCode: number | null;
  restarted: boolean;
  startedAt: number;
  endedAt: number | null;
  /** The stop sent to the agent (set with state `stopping`), so a resent stop keeps its outcome and reason. */
  stop: StopIntent | null;
  /** The memory the attempt was given, MB, when it is not the job's (a task grown after running out of memory); null: the job's. */
  memoryMb: number | null;
  /** What it used, as its agent reported at its end; null while live, or when the agent did not say. */
  usage: AttemptUsage | null;
}

/**
 * An ended attempt as `steward acct` lists it: the attempt with its job's name and owner. Kept
 * after the job is removed (table `accounting`) for the server's --accounting-days.
 */
export interface AccountingRecord {
  jobId: string;
  jobName: string;
  owner: string;
  taskIndex: number;
  number: number;
  host: string;
  /** The attempt's outcome, `held` for one a hold stopped (states.ts ACCOUNTING_OUTCOMES). */
  outcome: AccountingOutcome | null;
  exitCode: number | null;
  startedAt: number;
  endedAt: number;
  usage: AttemptUsage | null;
}

/** Which ended attempts `steward acct` asks for: ended at or after `since`, of `owner` when given, at most `limit`. */
export interface AccountingQuery {
  since: number;
  owner?: string;
  limit: number;
}

export interface EventRecord {
  /** Set by the store when the event is committed: increasing in commit order; 0 before. */
  id: number;
  jobId: string;
  at: number;
  /** One of model/events.ts's kinds (EventKind), or a kind an earlier version wrote. */
  kind: string;
  /** The numbers and names behind the message (a host, an attempt, a gain), for programs: EventData of the kind. */
  data: Record<string, unknown>;
  /** Rendered from kind and data when the event was recorded, and kept: an earlier version's event shows as written. */
  message: string;
}

export interface HostRecord {
  name: string;
  pool: string;
  state: HostState;
  slots: number;
  labels: Record<string, string>;
  facts: HostFacts;
  lastSeen: number;
  /** When a pilot's walltime ends (ms since the epoch, its agent's --ends-at); null for other hosts. */
  endsAt: number | null;
}

/** A host as listed: its record, its free slots, whether its agent is attached, its live attempts. */
export type HostListing = HostRecord & { slotsFree: number; connected: boolean; liveAttempts: number };

/** What a token lets its holder do: API tokens carry a role; join tokens bring agents; host credentials are a joined host's. */
export type TokenKind = "api" | "join" | "host";

/**
 * A user's secret (`steward secret set`): S3 credentials a job names by `credentials: NAME` on an
 * input or output. Kept as given, since the agent signs with it; sent only in the start message
 * of an attempt that names it, never shown by any route or written in events or logs.
 */
export interface SecretRecord {
  /** The user who set it: only their jobs may name it. */
  owner: string;
  /** model/secret-name.ts. */
  name: string;
  value: SecretValue;
  createdAt: number;
  updatedAt: number;
}

/** A secret as lists show it: never its value. */
export type SecretListing = Pick<SecretRecord, "name" | "createdAt" | "updatedAt">;

/** The API's roles: `admin` everything, `user` submits and controls their own jobs, `reader` reads all and changes nothing. */
export type Role = "admin" | "user" | "reader";

/**
 * A token the server gave out. Only a hash of its secret is kept (SHA-256 of a random 192-bit
 * secret): the token itself is printed once, at creation, and cannot be read back.
 */
export interface TokenRecord {
  /** Short public name, part of the token (`stw.ID.SECRET`); what `token list` and `revoke` name. */
  id: string;
  kind: TokenKind;
  /** The user of an API token; the host of a host credential; who created a join token. */
  subject: string;
  /** An API token's role; null for the other kinds. */
  role: Role | null;
  /** A join token's pool (null: any pool); a host credential's host pool. */
  pool: string | null;
  /** A host credential: the join token it was given under (null: the server's --join-token or a pilot's pool token). */
  parent: string | null;
  /** Hex SHA-256 of the secret. */
  hash: string;
  createdAt: number;
  createdBy: string;
  expiresAt: number | null;
  revokedAt: number | null;
  /** An API token's user's group (`token create --group`), for the groups' limits of the QoS file; null: none. */
  group?: string | null;
  /**
   * The QoS tiers an API token's jobs may ask for (`token create --qos`); null: the default tier
   * only (an admin's token: any tier).
   */
  qos?: string[] | null;
}

/** Who a request comes from: the user and role of the token it carries. */
export interface Principal {
  user: string;
  role: Role;
  /** The stored token's id; null for the admin token given at server start. */
  tokenId: string | null;
  /** The token's group (`token create --group`); absent or null: none. */
  group?: string | null;
  /** The QoS tiers the token's jobs may ask for; absent or null: the default tier (an admin: any). */
  qos?: readonly string[] | null;
}

/** A presented token that matched a stored one but may no longer be used, and why. */
export interface Refusal {
  refused: string;
}
