// What the routes are handed: one command per request (each runs one handler of the reactor and
// resolves once its changes are durable; broker/reactor/ports.ts declares them), a read model for
// queries, and a job's files. Every value is plain data (records, headers, a job as read), never the
// state's classes nor the store's. The server implements these (src/broker/server/api-reads.ts,
// job-files.ts, over the core src/broker/server/core.ts puts together); the routes know nothing else
// of it.

import type { Readable } from "node:stream";
import type { JobSpec } from "../../common/model/job-spec.ts";
import type {
  AccountingQuery,
  AccountingRecord,
  EventRecord,
  HostListing,
  JobHead,
  JobHeader,
  Principal,
  Refusal,
  RestartManifest,
  SecretListing,
  TokenKind,
  TokenRecord,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { JobState, TaskState } from "../../common/model/states.ts";
import type { PoolNote } from "../pools/pool-manager.ts";
import type {
  CheckpointCommands,
  HostCommands,
  JobCommands,
  JobRead,
  SecretCommands,
  TaskRead,
  TokenCommands,
  WorkflowCommands,
} from "../reactor/ports.ts";
import type { JobExplanation } from "../scheduler/explain.ts";
import type { ShareLine } from "../scheduler/fair-share-tree.ts";

/** A file of a job as the blob store holds it: its size, and its bytes. */
export interface StoredFile {
  /** Its size in bytes; null when the blob store has no such file. */
  size(): Promise<number | null>;
  /**
   * Its bytes, from a byte offset; a file that is not there fails, at once or as the stream is
   * first read (as the blob store can tell).
   */
  read(offset?: number): Readable;
}

/** An input as stored: its size, and the SHA-256 of its content (hex). */
export interface StoredInput {
  bytes: number;
  sha256: string;
}

/** An output file of an attempt: its path among the job's outputs, and its size. */
export interface OutputFile {
  path: string;
  bytes: number;
}

/**
 * What the routes do with a job's files, by what they are: inputs a submit uploads and agents
 * stage, logs the agents append (read here), outputs agents upload and users fetch, checkpoint
 * objects. The server implements it over the blob store and its layout; the routes never see a
 * blob's key. Each store resolves once the file is whole, with its size.
 */
/** An input as stored: its size, and the SHA-256 of its content (hex). */
export interface StoredInput {
  bytes: number;
  sha256: string;
}

export interface JobFiles {
  input(jobId: string, path: string): StoredFile;
  /** Stores an input and, once it is whole, the SHA-256 of its content beside it; answers both. */
  storeInput(jobId: string, path: string, content: Readable): Promise<StoredInput>;
  /** The SHA-256 of an input (hex); null for one stored without (by an earlier version). */
  inputDigest(jobId: string, path: string): Promise<string | null>;
  /** An attempt's stdout or stderr (a multi-node attempt's rank's). */
  log(jobId: string, task: number, attempt: number, stream: "stdout" | "stderr", rank: number): StoredFile;
  /** The output files an attempt stored, by path, sorted. */
  outputs(jobId: string, task: number, attempt: number): Promise<OutputFile[]>;
  output(jobId: string, task: number, attempt: number, path: string): StoredFile;
  storeOutput(jobId: string, task: number, attempt: number, path: string, content: Readable): Promise<number>;
  /** A checkpoint object of a task, by the SHA-256 of its content. */
  checkpointObject(jobId: string, task: number, sha256: string): StoredFile;
  storeCheckpointObject(jobId: string, task: number, sha256: string, content: Readable): Promise<number>;
  deleteCheckpointObject(jobId: string, task: number, sha256: string): Promise<void>;
  /** Deletes every file of a job (its removal, or a refused submit's inputs). */
  deleteJobFiles(jobId: string): Promise<void>;
}

/** What the agents' checkpoint uploads record, and the transfer rate they show. */
export interface CheckpointUploads extends Pick<CheckpointCommands, "objectStored" | "commit"> {
  /** An object of `bytes` took `ms` to arrive: the rescheduler prices moves with the observed rate. */
  noteTransfer(bytes: number, ms: number): void;
}

/**
 * What `steward explain` says of a job (or of a job file, a dry run's): its id and state, why it
 * waits and what the next pass does for it, host by host, and what each batch-backed pool does for
 * it (nothing, for a job that has ended).
 */
export type ExplainedJob = { id: string; state: JobState } & JobExplanation & { pools: PoolNote[] };

/** The queries: jobs, their headers and events, hosts, explain, tokens, and what an agent may touch. */
export interface ReadModel {
  now(): number;
  /**
   * Listens to the events as they are committed and to the jobs whose task counts change (their
   * ids); answers the function that stops listening.
   */
  watchEvents(onEvent: (event: EventRecord) => void, onProgress: (jobId: string) => void): () => void;
  /** A token by its id (any kind), or undefined. */
  token(id: string): TokenRecord | undefined;
  /** The tokens this server gave out, of one kind or of every kind, oldest first. */
  listTokens(kind?: TokenKind): TokenRecord[];
  /** A user's secrets by name, without their values. */
  secretsOf(owner: string): SecretListing[];
  /** Who presents an API token `text` at `now`: its user and role, a refusal (revoked, expired), or null. */
  principalOf(text: string, now: number): Principal | Refusal | null;
  /** The stored token of `kind` that `text` is at `now`, a refusal, or null. */
  matchToken(text: string, kind: TokenKind, now: number): TokenRecord | Refusal | null;
  /** A job in memory (live, or ended and not yet retired); NotFoundError otherwise. */
  job(id: string): JobRead;
  /** Any job, from memory or from the store; NotFoundError when there is none. */
  readJob(id: string): Promise<JobRead>;
  /** Any job without its tasks and attempts (its summary); NotFoundError when there is none. */
  readJobHead(id: string): Promise<JobHead>;
  /** One task of any job with its attempts; NotFoundError when there is no such job or task. */
  readTask(id: string, index: number): Promise<TaskRead>;
  /** The state of each task of any job, by index; NotFoundError when there is no such job. */
  readTaskStates(id: string): Promise<readonly TaskState[]>;
  header(id: string): JobHeader | undefined;
  /** A job's events, oldest first (from the store). */
  jobEvents(id: string): Promise<EventRecord[]>;
  /** The events with an id above `after`, in id order, at most `limit`, of one job when `jobId` is given. */
  eventsAfter(after: number, limit: number, jobId?: string): Promise<EventRecord[]>;
  /** Ended attempts (of the jobs held, and those kept of removed ones), oldest end first. */
  accounting(query: AccountingQuery): Promise<AccountingRecord[]>;
  /** A workflow by its id, or undefined. */
  workflow(id: string): WorkflowRecord | undefined;
  /** Every workflow, whatever became of its jobs. */
  listWorkflows(): WorkflowRecord[];
  jobOwner(id: string): string | undefined;
  listJobs(withRetired?: boolean): JobHeader[];
  /** Every host, read once the changes handled so far are committed. */
  readHosts(): Promise<HostListing[]>;
  hostOf(name: string): HostListing | undefined;
  /** The fair-share tree as lines: every line, or a viewer's own and the accounts above it. */
  shares(viewer?: string): { at: number; halfLifeSeconds: number; lines: ShareLine[] };
  /** Explains any job (`viewer`: a user, who sees other users' jobs neither named nor described). */
  explainJob(id: string, viewer: string | null): Promise<ExplainedJob>;
  /** A job file as a submit now would admit it (QoS tier, quotas), or the submit's refusal thrown. */
  admitDraft(spec: JobSpec, owner: string, allowedQos: readonly string[] | null): JobSpec;
  /** What explain would say of a job file submitted now by `owner`, without submitting it. */
  explainDraft(
    spec: JobSpec,
    owner: string,
    dependencyOwner: string | null,
    viewer: string | null,
  ): ExplainedJob;
  ranksOn(host: string, jobId: string, taskIndex: number, number: number): number[];
  liveRanksOn(host: string, jobId: string, taskIndex?: number): number[];
  isCurrent(jobId: string, taskIndex: number, number: number): boolean;
  acceptsOutputs(jobId: string, taskIndex: number, number: number): boolean;
  unknownCheckpointObjects(jobId: string, taskIndex: number, shas: readonly string[]): string[];
  /** The checkpoint a restarted attempt of the task starts from (a multi-node job's: the rank's), or null. */
  restartManifest(jobId: string, taskIndex: number, rank?: number): RestartManifest | null;
}

export interface ApiPorts {
  jobs: JobCommands;
  workflows: WorkflowCommands;
  hosts: HostCommands;
  tokens: TokenCommands;
  secrets: SecretCommands;
  checkpoints: CheckpointUploads;
  read: ReadModel;
}
