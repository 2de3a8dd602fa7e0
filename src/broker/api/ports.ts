// What the routes are handed: one command per request (each runs one handler of the reactor and
// resolves once its changes are durable) and a read model for queries. The server implements these
// (src/broker/server/core.ts puts them together over the reactor's commands and read model); the routes
// know nothing else of it.

import type { EventEmitter } from "node:events";
import type { JobSpec } from "../../common/model/job-spec.ts";
import type { JobUpdate } from "../../common/model/job-update.ts";
import type {
  CheckpointFile,
  EventRecord,
  HostRecord,
  JobHeader,
  TokenKind,
  TokenRecord,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { TaskState } from "../../common/model/states.ts";
import type { RetryRequest, RetrySelection } from "../../common/model/task-retry.ts";
import type { ReceivedJob, Submission, SubmittedJob } from "../reactor/commands/jobs.ts";
import type { ReceiveWorkflow } from "../reactor/commands/workflows.ts";
import type { AttemptPlaced } from "../reactor/effects.ts";
import type {
  CheckpointCommit,
  CheckpointCommitted,
  CheckpointObjectStored,
} from "../reactor/handlers/checkpoints.ts";
import type { TokenRequest } from "../reactor/handlers/tokens.ts";
import type { WorkflowJobsTouched } from "../reactor/handlers/workflow-control.ts";
import type { WorkflowMade, WorkflowRetried } from "../reactor/handlers/workflows.ts";
import type { TaskRead } from "../reactor/read-model.ts";
import type { Explanation } from "../scheduler/explain.ts";
import type { ShareLine } from "../scheduler/fair-share-tree.ts";
import type { HostListing } from "../state/cluster-state.ts";
import type { JobEntry } from "../state/job-entry.ts";
import type { JobHead } from "../state/job-header.ts";
import type { TokenRegistry } from "../state/token-registry.ts";
import type { Store } from "../store/store.ts";

/**
 * What routes read from the store itself, past the read model: ended attempts for accounting
 * (`/accounting`), a job's events, and the events after an id for a stream that catches up. The
 * routes are handed it; they do not import the store.
 */
export type StoreReads = Pick<Store, "accounting" | "events" | "eventsAfter">;

export interface JobCommands {
  /**
   * Creates a job; resolves once it is durable. A repeated submit (the key of an earlier one of
   * the owner's) answers the job that one made without calling `receive`, whose request is then
   * read past. `receive` reads the job and stores its inputs, under an id from `newId`.
   */
  submit(
    submission: Submission,
    receive: (newId: () => Promise<string>) => Promise<ReceivedJob>,
  ): Promise<JobEntry>;
  /** The same, answering also the new job's events as committed (null: a repeated submit's job). */
  submitWithEvents(
    submission: Submission,
    receive: (newId: () => Promise<string>) => Promise<ReceivedJob>,
  ): Promise<SubmittedJob>;
  cancel(id: string, by?: string): Promise<JobHead>;
  /** Cancels some tasks of a job (reactor/handlers/control.ts's cancelTasks). */
  cancelTasks(id: string, tasks: readonly number[], by?: string): Promise<JobHead>;
  /** Gives failed or cancelled tasks new attempts (reactor/handlers/retry.ts). */
  retry(
    id: string,
    request: RetryRequest,
    by?: string,
    allowedQos?: readonly string[] | null,
  ): Promise<RetrySelection & { job: JobEntry }>;
  hold(id: string, by?: string, reason?: string): Promise<JobEntry>;
  release(id: string, by?: string): Promise<JobHead>;
  migrate(id: string, to: string | null, by?: string): Promise<JobEntry>;
  /** Changes fields of a job not yet running (reactor/handlers/update.ts). */
  /** `allowedQos`: the tiers the one who asks may give the job (null: any, an admin). */
  update(
    id: string,
    update: JobUpdate,
    by?: string,
    allowedQos?: readonly string[] | null,
  ): Promise<JobEntry>;
  remove(id: string): Promise<void>;
}

export interface HostCommands {
  drain(name: string): Promise<HostRecord>;
  undrain(name: string): Promise<HostRecord>;
  /** Forgets a host whose agent is not attached; answers the ids of its host credentials, revoked. */
  removeHost(name: string, by?: string): Promise<string[]>;
}

export interface TokenCommands {
  create(request: TokenRequest): Promise<TokenRecord>;
  revoke(id: string, kinds: readonly TokenKind[]): Promise<TokenRecord>;
}

/** What the agents' checkpoint uploads record. */
export interface CheckpointCommands {
  objectStored(stored: CheckpointObjectStored): Promise<void>;
  commit(commit: CheckpointCommit): Promise<CheckpointCommitted>;
  /** An object of `bytes` took `ms` to arrive: the rescheduler prices moves with the observed rate. */
  noteTransfer(bytes: number, ms: number): void;
}

export type JobExplanation = { reasons: string[]; othersAhead: number } & Explanation;

/** The queries: jobs, their headers, hosts, explain, tokens, and what an agent may touch. */
export interface ReadModel {
  now(): number;
  readonly events: EventEmitter<{
    event: [EventRecord];
    job: [JobEntry];
    progress: [string];
    placed: [AttemptPlaced];
  }>;
  readonly tokens: TokenRegistry;
  /** A job in memory (live, or ended and not yet retired); NotFoundError otherwise. */
  job(id: string): JobEntry;
  /** Any job, from memory or from the store; NotFoundError when there is none. */
  readJob(id: string): Promise<JobEntry>;
  /** Any job without its tasks and attempts (its summary); NotFoundError when there is none. */
  readJobHead(id: string): Promise<JobHead>;
  /** One task of any job with its attempts; NotFoundError when there is no such job or task. */
  readTask(id: string, index: number): Promise<TaskRead>;
  /** The state of each task of any job, by index; NotFoundError when there is no such job. */
  readTaskStates(id: string): Promise<readonly TaskState[]>;
  header(id: string): JobHeader | undefined;
  /** A workflow by its id, or undefined. */
  workflow(id: string): WorkflowRecord | undefined;
  /** Every workflow, whatever became of its jobs. */
  listWorkflows(): WorkflowRecord[];
  jobOwner(id: string): string | undefined;
  listJobs(withRetired?: boolean): JobHeader[];
  listHosts(): HostListing[];
  /** Every host, read once the changes handled so far are committed. */
  readHosts(): Promise<HostListing[]>;
  hostOf(name: string): HostListing | undefined;
  /** The fair-share tree as lines: every line, or a viewer's own and the accounts above it. */
  shares(viewer?: string): { at: number; halfLifeSeconds: number; lines: ShareLine[] };
  explain(id: string, viewer?: string | null): Promise<JobExplanation>;
  /** A job file as a submit now would admit it (QoS tier, quotas), or the submit's refusal thrown. */
  admitDraft(spec: JobSpec, owner: string, allowedQos: readonly string[] | null): JobSpec;
  explainDraft(
    spec: JobSpec,
    owner: string,
    dependencyOwner: string | null,
    viewer?: string | null,
  ): { job: JobEntry; explanation: JobExplanation };
  ranksOn(host: string, jobId: string, taskIndex: number, number: number): number[];
  liveRanksOn(host: string, jobId: string, taskIndex?: number): number[];
  isCurrent(jobId: string, taskIndex: number, number: number): boolean;
  acceptsOutputs(jobId: string, taskIndex: number, number: number): boolean;
  unknownCheckpointObjects(jobId: string, taskIndex: number, shas: readonly string[]): string[];
  restartManifest(
    jobId: string,
    taskIndex: number,
    rank?: number,
  ): { files: CheckpointFile[]; gang?: { rank: number; generation: number } } | null;
}

/** Workflows (reactor/commands/workflows.ts). */
export interface WorkflowCommands {
  /**
   * Makes every job of a workflow file at once; resolves once all are durable. `allowedQos`: the
   * tiers the submitter's token allows (null: any, an admin), checked for every job as at submit.
   */
  submit(
    owner: string,
    submitKey: string | null,
    receive: ReceiveWorkflow,
    allowedQos?: readonly string[] | null,
  ): Promise<WorkflowMade>;
  /** Reruns the workflow's failed and cancelled jobs and what waits on them. */
  retry(id: string, by?: string, allowedQos?: readonly string[] | null): Promise<WorkflowRetried>;
  /** Cancels every job of the workflow that has not ended, in one step (the members cancelled). */
  cancel(id: string, by?: string): Promise<WorkflowJobsTouched>;
  /** Holds every job of the workflow that has not ended, in one step (the members held). */
  hold(id: string, by?: string, reason?: string): Promise<WorkflowJobsTouched>;
  /** Releases every held job of the workflow, in one step (the members released). */
  release(id: string, by?: string): Promise<WorkflowJobsTouched>;
  /** Removes every job of the workflow, all ended, in one step (the members removed); 409 otherwise. */
  remove(id: string): Promise<WorkflowJobsTouched>;
}

export interface ApiPorts {
  jobs: JobCommands;
  workflows: WorkflowCommands;
  hosts: HostCommands;
  tokens: TokenCommands;
  checkpoints: CheckpointCommands;
  read: ReadModel;
}
