// What the reactor hands to what serves requests (the HTTP routes, the agents' gateway): its
// commands, one per request, each running one handler and resolving once its changes are durable,
// and the plain values they and the read model answer. The commands (reactor/commands/) implement
// these; the API's ports (broker/api/ports.ts) are made of them. Values are data only: records,
// headers, and a job as read (JobRead), never the state's classes.

import type { JobSpec } from "../../common/model/job-spec.ts";
import type { JobUpdate } from "../../common/model/job-update.ts";
import type {
  AttemptRecord,
  CheckpointPart,
  EventRecord,
  HostRecord,
  JobHead,
  SecretListing,
  TaskRecord,
  TokenKind,
  TokenRecord,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { SecretValue } from "../../common/model/secret-value.ts";
import type { RetryRequest, RetrySelection } from "../../common/model/task-retry.ts";
import type { WorkflowFile } from "../../common/model/workflow.ts";
import type { EndedEvent, HelloMessage, StartedEvent } from "../../common/protocol/messages.ts";
import type { ProgressSample } from "../scheduler/estimate.ts";
import type { AttemptRef } from "./handlers/agent-reports.ts";
import type {
  CheckpointCommit,
  CheckpointCommitted,
  CheckpointObjectStored,
} from "./handlers/checkpoints.ts";
import type { SecretSet } from "./handlers/secrets.ts";
import type { TokenRequest } from "./handlers/tokens.ts";
import type { WorkflowJobsTouched } from "./handlers/workflow-control.ts";

/**
 * A job as read: its header (state, counts) and record (job file, workflow), its tasks, each task's
 * attempts by number and, while it runs, the last progress it reported. Read at once: a job in
 * memory goes on changing once the reader awaits.
 */
export interface JobRead extends Readonly<JobHead> {
  readonly tasks: readonly TaskRecord[];
  readonly attempts: ReadonlyMap<number, readonly AttemptRecord[]>;
  readonly progress: ReadonlyMap<number, ProgressSample>;
}

/** One task with its attempts (by number) and, while it runs, the last progress it reported. */
export interface TaskRead {
  task: TaskRecord;
  attempts: readonly AttemptRecord[];
  progress: ProgressSample | undefined;
}

/** Who submits: the owner, the client's Idempotency-Key (or null), whose jobs `dependsOn` may name. */
export interface Submission {
  owner: string;
  submitKey: string | null;
  /** The one owner whose jobs `dependsOn` may name (null: any). */
  dependencyOwner: string | null;
  /** The QoS tiers the submitter may use; absent or null: any (an admin). */
  allowedQos?: readonly string[] | null;
}

/** A submitted job as received: its file, its input files already stored, the id they are stored under. */
export interface ReceivedJob {
  spec: JobSpec;
  inputs: string[];
  /** The SHA-256 of each of `inputs` as stored (hex, by path); absent: none known. */
  inputDigests?: Readonly<Record<string, string>>;
  id?: string;
}

/**
 * Receives a new job's file (and stores its inputs); `newId` hands out the job's id, for a request
 * whose inputs are stored under it before the job is made.
 */
export type ReceiveJob = (newId: () => Promise<string>) => Promise<ReceivedJob>;

/** A submit's answer: the job, and its events when this submit made it. */
export interface SubmittedJob {
  job: JobRead;
  /**
   * The job's events committed by the time of the answer (oldest first, as the store reads them)
   * when this submit made the job; null when it answers the job of an earlier submit with the same
   * key, whose events are the store's to tell.
   */
  events: EventRecord[] | null;
}

/** The user's requests on jobs (reactor/commands/jobs.ts). */
export interface JobCommands {
  /**
   * Creates a job; resolves once it is durable. A repeated submit (the key of an earlier one of
   * the owner's) answers the job that one made without calling `receive`, whose request is then
   * read past. `receive` reads the job and stores its inputs, under an id from `newId`.
   */
  submit(submission: Submission, receive: ReceiveJob): Promise<SubmittedJob>;
  /** Cancels a job (one that has ended is answered as it is); answers it without its tasks. */
  cancel(id: string, by?: string): Promise<JobHead>;
  /** Cancels some tasks of a job (reactor/handlers/control.ts's cancelTasks). */
  cancelTasks(id: string, tasks: readonly number[], by?: string): Promise<JobHead>;
  /**
   * Gives failed or cancelled tasks new attempts (reactor/handlers/retry.ts). `allowedQos`: the
   * tiers the one who asks may use (null: any, an admin).
   */
  retry(
    id: string,
    request: RetryRequest,
    by?: string,
    allowedQos?: readonly string[] | null,
  ): Promise<RetrySelection & { job: JobRead }>;
  hold(id: string, by?: string, reason?: string): Promise<JobRead>;
  /** Releases a held job; one that has ended is answered as it is (without its tasks). */
  release(id: string, by?: string): Promise<JobHead>;
  migrate(id: string, to: string | null, by?: string): Promise<JobRead>;
  /**
   * Changes fields of a job not yet running (reactor/handlers/update.ts). `allowedQos`: the tiers
   * the one who asks may give the job (null: any, an admin).
   */
  update(id: string, update: JobUpdate, by?: string, allowedQos?: readonly string[] | null): Promise<JobRead>;
  /** Removes a job that has ended, with its records. */
  remove(id: string): Promise<void>;
}

/** The ids a workflow is made with: its own, and each job's by name. */
export interface WorkflowIds {
  id: string;
  jobs: ReadonlyMap<string, string>;
}

/** A workflow as received: its file checked, each job's inputs stored under its id (by name). */
export interface ReceivedWorkflow {
  file: WorkflowFile;
  ids: WorkflowIds;
  inputs: ReadonlyMap<string, string[]>;
  /** The SHA-256 of each job's inputs as stored (hex, by path), by name; absent: none known. */
  inputDigests?: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

/**
 * Receives a workflow file (and stores its jobs' inputs); `assign` hands out the ids for the file
 * checked, before the inputs are stored under them.
 */
export type ReceiveWorkflow = (
  assign: (file: WorkflowFile) => Promise<WorkflowIds>,
) => Promise<ReceivedWorkflow>;

/** The jobs of a workflow given new attempts, in the workflow's order: each by name and id, with its tasks retried. */
export interface WorkflowRetry {
  retried: { name: string; job: string; tasks: number[] }[];
}

/** The user's requests on workflows (reactor/commands/workflows.ts). */
export interface WorkflowCommands {
  /**
   * Makes every job of a workflow file at once; resolves once all are durable, with the workflow.
   * A repeated submit (the key of an earlier one of the owner's) answers the workflow that one
   * made. `allowedQos`: the tiers the submitter's token allows (null: any, an admin), checked for
   * every job as at submit.
   */
  submit(
    owner: string,
    submitKey: string | null,
    receive: ReceiveWorkflow,
    allowedQos?: readonly string[] | null,
  ): Promise<WorkflowRecord>;
  /** Reruns the workflow's failed and cancelled jobs and what waits on them. */
  retry(id: string, by?: string, allowedQos?: readonly string[] | null): Promise<WorkflowRetry>;
  /** Cancels every job of the workflow that has not ended, in one step (the members cancelled). */
  cancel(id: string, by?: string): Promise<WorkflowJobsTouched>;
  /** Holds every job of the workflow that has not ended, in one step (the members held). */
  hold(id: string, by?: string, reason?: string): Promise<WorkflowJobsTouched>;
  /** Releases every held job of the workflow, in one step (the members released). */
  release(id: string, by?: string): Promise<WorkflowJobsTouched>;
  /** Removes every job of the workflow, all ended, in one step (the members removed); 409 otherwise. */
  remove(id: string): Promise<WorkflowJobsTouched>;
}

/** The admin's requests on hosts (reactor/commands/hosts.ts). */
export interface HostCommands {
  /** A host takes no new work; what runs there runs on. */
  drain(name: string): Promise<HostRecord>;
  /** A draining host takes work again (a ready one is answered as it is; a lost one: ConflictError). */
  undrain(name: string): Promise<HostRecord>;
  /** Forgets a host whose agent is not attached; answers the ids of its host credentials, revoked. */
  removeHost(name: string, by?: string): Promise<string[]>;
}

/** Tokens given out and revoked (reactor/commands/tokens.ts). */
export interface TokenCommands {
  /** Stores a new token (its hash). */
  create(request: TokenRequest): Promise<TokenRecord>;
  /** Revokes a token of one of `kinds` (a join token with its hosts' credentials; their agents are disconnected). */
  revoke(id: string, kinds: readonly TokenKind[]): Promise<TokenRecord>;
}

/** A user's secrets set and removed (reactor/commands/secrets.ts); `owner` is the user asking. */
export interface SecretCommands {
  /** Sets the owner's secret, new or in place of theirs of that name. */
  set(owner: string, name: string, value: SecretValue): Promise<SecretSet>;
  /** Removes the owner's secret; NotFoundError when they have none of that name. */
  remove(owner: string, name: string): Promise<SecretListing>;
}

/** What the agents' checkpoint uploads record (reactor/commands/checkpoints.ts). */
export interface CheckpointCommands {
  /** An object of a task's checkpoint is stored: a commit may name it. */
  objectStored(stored: CheckpointObjectStored): Promise<void>;
  /** A checkpoint manifest committed by a live attempt (handlers/checkpoints.ts); older blobs dropped. */
  commit(commit: CheckpointCommit): Promise<CheckpointCommitted>;
  /** Parts read from a store of an earlier version's manifests at start (server/legacy-checkpoints.ts). */
  recordLegacyParts(parts: readonly CheckpointPart[]): Promise<void>;
}

/** What an agent says: its hello and its reports of attempts (reactor/commands/agents.ts). */
export interface AgentCommands {
  /**
   * An agent said hello. Answers the attempts it must kill (no longer live) and, when it joined
   * with a join token (`credential` given), the text of the host credential it gets, durable
   * before it is answered.
   */
  attachHost(
    message: HelloMessage,
    credential?: { parent: string | null },
  ): Promise<{ kill: AttemptRef[]; credential?: string }>;
  /** One started report (as attemptReports applies it alone); rejects with its error. */
  attemptStarted(
    hostName: string,
    jobId: string,
    taskIndex: number,
    attempt: number,
    coordinatorPort?: number,
    rank?: number,
  ): Promise<void>;
  /** One ended report (as attemptReports applies it alone); rejects with its error. */
  attemptEnded(hostName: string, report: EndedEvent): Promise<void>;
  /**
   * A host's started and ended reports, applied in their order as one step (one commit); resolves
   * once durable with each report's error (null when applied).
   */
  attemptReports(hostName: string, reports: readonly (StartedEvent | EndedEvent)[]): Promise<unknown[]>;
}
