// The broker's core as the API and the agent gateway see it: each request or report becomes one
// handler run by the reactor (src/reactor/), queries read the cluster state (src/state/).

import type { JobSpec } from "../model/job-spec.ts";
import type { HostFacts, HostRecord, TokenKind, TokenRecord } from "../model/records.ts";
import type { JobState } from "../model/states.ts";
import { newTokenOf } from "../model/tokens.ts";
import { explainJob, type JobExplanation } from "../planner/explain-job.ts";
import type { EndedEvent, HeartbeatMessage, HelloMessage } from "../protocol/messages.ts";
import type { AgentLinks, CheckpointBlobs } from "../reactor/effects.ts";
import { ConflictError, NotFoundError } from "../reactor/errors.ts";
import {
  type AttemptRef,
  attachHost,
  attemptEnded,
  attemptStarted,
  recordHeartbeat,
} from "../reactor/handlers/agent-reports.ts";
import {
  type CheckpointCommit,
  type CheckpointCommitted,
  type CheckpointObjectStored,
  checkpointObjectStored,
  commitCheckpoint,
} from "../reactor/handlers/checkpoints.ts";
import { watchContracts } from "../reactor/handlers/contracts.ts";
import {
  cancelJob,
  drainHost,
  holdJob,
  migrateJob,
  releaseJob,
  removeHost,
  removeJob,
  undrainHost,
} from "../reactor/handlers/control.ts";
import { followRequirementsFiles } from "../reactor/handlers/requirements-file.ts";
import { submitJob } from "../reactor/handlers/submit.ts";
import {
  createToken,
  issueHostCredential,
  revokeToken,
  type TokenRequest,
} from "../reactor/handlers/tokens.ts";
import { leaveBeforeWalltime, walltimeDue } from "../reactor/handlers/walltime.ts";
import { IdBlock } from "../reactor/id-block.ts";
import { Reactor } from "../reactor/reactor.ts";
import { type MetaschedulingPolicy, policyOf } from "../scheduler/policy.ts";
import { observedTransferRate } from "../scheduler/transfer-rate.ts";
import { attemptRanksOn, liveRanksOn } from "../state/agent-binding.ts";
import { ClusterState, type HostListing, submissionKey } from "../state/cluster-state.ts";
import { entryOfStored, type JobEntry } from "../state/job-entry.ts";
import { headerOf, type JobHeader } from "../state/job-header.ts";
import { recoverState } from "../state/recover.ts";
import { restartManifest } from "../state/task-checkpoints.ts";
import type { TokenRegistry } from "../state/token-registry.ts";
import type { GroupCommitter } from "../store/group-commit.ts";
import { StaleTermError, type StoreSnapshot } from "../store/store.ts";

export type { AgentLinks } from "../reactor/effects.ts";

export interface CoreOptions {
  heartbeatSeconds: number;
  hostTimeoutSeconds: number;
  now?: () => number;
  random?: () => number;
  onFatal?: (error: unknown) => void;
  policy?: Partial<MetaschedulingPolicy>;
  /** Accounting rows of removed jobs are kept this many days after their attempt ended (default 365). */
  accountingDays?: number;
}

/** `--accounting-days`' default: a year of `steward acct` after a job is removed. */
export const DEFAULT_ACCOUNTING_DAYS = 365;

/** How often the leader drops the accounting rows older than it keeps (and once at start). */
const ACCOUNTING_PURGE_MS = 3_600_000;

export class Core {
  readonly reactor: Reactor;
  readonly #jobIds: IdBlock;
  readonly #committer: GroupCommitter;
  /** The store's meta entries (small records of the broker's own, e.g. the pilots it submitted). */
  #meta = new Map<string, string>();
  readonly #accountingDays: number;
  #purgeTimer: NodeJS.Timeout | null = null;

  constructor(committer: GroupCommitter, options: CoreOptions) {
    this.#committer = committer;
    this.#accountingDays = options.accountingDays ?? DEFAULT_ACCOUNTING_DAYS;
    this.reactor = new Reactor(new ClusterState(), committer, {
      hostTimeoutSeconds: options.hostTimeoutSeconds,
      now: options.now ?? Date.now,
      random: options.random ?? Math.random,
      onFatal: options.onFatal,
      policy: options.policy,
    });
    // A reservation refused for an older term means another server leads: as fatal as a refused commit.
    this.#jobIds = new IdBlock((count) =>
      committer.store.reserveIds(committer.term, "job", count).catch((error: unknown) => {
        if (error instanceof StaleTermError) this.reactor.fatal(error);
        throw error;
      }),
    );
  }

  get events() {
    return this.reactor.events;
  }

  private get state(): ClusterState {
    return this.reactor.state;
  }

  setLinks(links: AgentLinks): void {
    this.reactor.setLinks(links);
  }

  /** Where the checkpoint blobs the reactor drops are deleted. */
  setCheckpointBlobs(blobs: CheckpointBlobs): void {
    this.reactor.setCheckpointBlobs(blobs);
  }

  /** Rebuilds the state from the store (GridWay's recover). Hosts get one host timeout to re-attach. */
  recover(snapshot: StoreSnapshot): void {
    this.reactor.state = recoverState(snapshot, this.reactor.now());
    this.#meta = new Map(Object.entries(snapshot.meta));
  }

  /** A meta entry as last set (recovered from the store), or undefined. */
  meta(key: string): string | undefined {
    return this.#meta.get(key);
  }

  /** Sets a meta entry; durable when the promise resolves. */
  async setMeta(key: string, value: string): Promise<void> {
    this.#meta.set(key, value);
    await this.#committer.push([{ op: "setMeta", key, value }]);
  }

  /**
   * Drops the accounting rows of removed jobs whose attempts ended more than --accounting-days
   * ago; durable when the promise resolves. No state in memory holds them.
   */
  async purgeAccounting(): Promise<void> {
    const endedBefore = this.reactor.now() - this.#accountingDays * 86_400_000;
    await this.#committer.push([{ op: "purgeAccounting", endedBefore }]);
  }

  start(): void {
    this.reactor.start();
    // A refused commit (another server leads) is the reactor's to notice; a later round retries.
    const purge = () => void this.purgeAccounting().catch(() => {});
    purge();
    this.#purgeTimer = setInterval(purge, ACCOUNTING_PURGE_MS);
    this.#purgeTimer.unref();
  }

  stop(): void {
    if (this.#purgeTimer) clearInterval(this.#purgeTimer);
    this.#purgeTimer = null;
    this.reactor.stop();
  }

  // ---- queries

  /** The job of that id if it is in memory (live, or ended and not yet retired), or undefined. */
  findJob(id: string): JobEntry | undefined {
    return this.state.jobs.get(id);
  }

  /** A job in memory (the agents' routes: only a live job's attempts move files). */
  job(id: string): JobEntry {
    const job = this.state.jobs.get(id);
    if (!job) throw new NotFoundError(`no job ${id}`);
    return job;
  }

  /** Any job with its tasks and attempts: from memory, or from the store once it has ended and left. */
  async readJob(id: string): Promise<JobEntry> {
    const job = this.state.jobs.get(id);
    if (job) return job;
    const stored = this.state.ended.has(id) ? await this.#committer.store.loadJob(id) : null;
    if (!stored) throw new NotFoundError(`no job ${id}`);
    return entryOfStored(stored);
  }

  /** A job's header (the line `ps` prints), live or ended; undefined when there is no such job. */
  header(id: string): JobHeader | undefined {
    return this.state.header(id);
  }

  /** A job's owner, live or ended. */
  jobOwner(id: string): string | undefined {
    return this.state.jobOwner(id);
  }

  /** The tokens this server gave out (API tokens, join tokens, host credentials). */
  get tokens(): TokenRegistry {
    return this.state.tokens;
  }

  /**
   * Every job's header: those in memory, then those that ended and left it. Without `withRetired`,
   * only those in memory (every job not ended is: a listing of those does not walk the history).
   */
  listJobs(withRetired = true): JobHeader[] {
    const headers: JobHeader[] = [];
    for (const job of this.state.jobs.values()) headers.push(headerOf(job));
    if (withRetired) for (const header of this.state.ended.values()) headers.push(header);
    return headers;
  }

  /** How many jobs there are in each state, the retired ones counted from their columns. */
  jobCountsByState(): Map<JobState, number> {
    const counts = this.state.ended.countByState();
    for (const job of this.state.jobs.values())
      counts.set(job.record.state, (counts.get(job.record.state) ?? 0) + 1);
    return counts;
  }

  listHosts(): HostListing[] {
    return this.state.hostList();
  }

  /** Why a job's tasks wait and what the next pass does for it (planner/explain-job.ts). */
  async explain(id: string, viewer: string | null = null): Promise<JobExplanation> {
    const job = await this.readJob(id);
    return explainJob(this.state, job, this.reactor.now(), this.reactor.options.policy, viewer);
  }

  /**
   * The ranks `host` runs of an attempt in memory (live or ended): none when the attempt is
   * unknown or placed elsewhere. What a host may write of an attempt (outputs, logs, checkpoints).
   */
  ranksOn(host: string, jobId: string, taskIndex: number, number: number): number[] {
    return attemptRanksOn(this.state, host, jobId, taskIndex, number);
  }

  /** The ranks `host` runs of a job's live attempts (of one task, if given): what it may read of the job. */
  liveRanksOn(host: string, jobId: string, taskIndex?: number): number[] {
    return liveRanksOn(this.state, host, jobId, taskIndex);
  }

  /** Whether an attempt is live (fencing by attempt identity): only a live attempt may upload or commit. */
  isCurrent(jobId: string, taskIndex: number, number: number): boolean {
    return this.state.liveAttempt(jobId, taskIndex, number) !== undefined;
  }

  /**
   * Whether a live attempt may upload outputs: not once its task has a result, which a replica that
   * won the race gave it (guarantee 4: the losers' outputs are never stored, let alone committed).
   */
  acceptsOutputs(jobId: string, taskIndex: number, number: number): boolean {
    const live = this.state.liveAttempt(jobId, taskIndex, number);
    return live !== undefined && live.job.tasks[taskIndex]?.state === "running";
  }

  /** A checkpoint object of `bytes` took `ms` to arrive: the rescheduler prices moves with the observed rate. */
  noteCheckpointTransfer(bytes: number, ms: number): void {
    this.state.transferBytesPerSecond = observedTransferRate(this.state.transferBytesPerSecond, bytes, ms);
  }

  /** Of these checkpoint objects of a task, those this server does not know as stored. */
  unknownCheckpointObjects(jobId: string, taskIndex: number, shas: readonly string[]): string[] {
    const stored = this.job(jobId).checkpointsOf(taskIndex).storedObjects();
    return shas.filter((sha) => !stored.has(sha));
  }

  /** The manifest a restarted attempt of the task gets (a multi-node job's: the rank's), or null. */
  restartManifest(jobId: string, taskIndex: number, rank?: number): ReturnType<typeof restartManifest> {
    return restartManifest(this.job(jobId), taskIndex, rank);
  }

  /** The job an earlier submit with this owner's key made, if any (one that ended is read from the store). */
  async findSubmission(owner: string, submitKey: string | null): Promise<JobEntry | undefined> {
    if (submitKey === null) return undefined;
    const live = this.state.submissions.get(submissionKey(owner, submitKey));
    if (live) return live;
    const id = await this.#committer.store.findSubmission(owner, submitKey);
    if (id === null) return undefined;
    return this.readJob(id).catch((error: unknown) => {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    });
  }

  // ---- user requests: each resolves once its changes are durable

  async allocateJobId(): Promise<string> {
    return String(await this.#jobIds.next());
  }

  /**
   * Creates a job; resolves once it is durable. `inputs` are the input files already stored;
   * `dependencyOwner` is the one owner whose jobs `dependsOn` may name (null: any).
   */
  async submit(
    spec: JobSpec,
    owner: string,
    inputs: string[],
    id?: string,
    submitKey: string | null = null,
    dependencyOwner: string | null = null,
  ): Promise<JobEntry> {
    // A repeated submit answers the job the first one made, once that is durable too.
    const known = await this.findSubmission(owner, submitKey);
    if (known) {
      await this.#committer.flush();
      return known;
    }
    const jobId = id ?? (await this.allocateJobId());
    const job = await this.reactor.run((step) =>
      submitJob(step, { id: jobId, spec, owner, inputs, submitKey, dependencyOwner }),
    );
    if (job.id !== jobId) await this.#committer.flush();
    return job;
  }

  /** Cancels a job; one that has ended is answered as it is. */
  cancel(id: string, by?: string): Promise<JobEntry> {
    if (this.#retired(id)) return this.readJob(id);
    return this.reactor.run((step) => cancelJob(step, id, by));
  }

  /** Holds a job: pending tasks do not start; running attempts are stopped (ended `preempted`, reason `held`). */
  async hold(id: string, by?: string): Promise<JobEntry> {
    const ended = this.state.ended.get(id);
    if (ended && !this.state.jobs.has(id)) throw new ConflictError(`job ${id} is ${ended.state}`);
    return this.reactor.run((step) => holdJob(step, id, by));
  }

  /** Releases a held job; one that has ended is answered as it is. */
  release(id: string, by?: string): Promise<JobEntry> {
    if (this.#retired(id)) return this.readJob(id);
    return this.reactor.run((step) => releaseJob(step, id, by));
  }

  /** Stops the job's running attempts with a checkpoint; their tasks restart on another host (or `to`). */
  async migrate(id: string, to: string | null, by?: string): Promise<JobEntry> {
    if (this.#retired(id)) throw new ConflictError(`job ${id} has no running attempt to migrate`);
    return this.reactor.run((step) => migrateJob(step, id, to, by));
  }

  /** Whether the job ended and left memory (only its header is here). */
  #retired(id: string): boolean {
    return !this.state.jobs.has(id) && this.state.ended.has(id);
  }

  drain(name: string): Promise<HostRecord> {
    return this.reactor.run((step) => drainHost(step, name));
  }

  /** A draining host takes work again (a ready one is answered as it is; a lost one: ConflictError). */
  undrain(name: string): Promise<HostRecord> {
    return this.reactor.run((step) => undrainHost(step, name));
  }

  /** Forgets a host whose agent is not attached, revoking its host credentials (their ids answered). */
  removeHost(name: string, by?: string): Promise<string[]> {
    return this.reactor.run((step) => removeHost(step, name, by));
  }

  /** A host as the API shows it: its record, free slots, whether attached, its live attempts. */
  hostOf(name: string): HostListing | undefined {
    return this.state.hostList().find((host) => host.name === name);
  }

  remove(id: string): Promise<void> {
    return this.reactor.run((step) => removeJob(step, id));
  }

  /** An object of a task's checkpoint is stored: a commit may name it. */
  checkpointObjectStored(stored: CheckpointObjectStored): Promise<void> {
    return this.reactor.run((step) => checkpointObjectStored(step, stored));
  }

  /** A checkpoint manifest committed by a live attempt (handlers/checkpoints.ts); durable, older blobs dropped. */
  commitCheckpoint(commit: CheckpointCommit): Promise<CheckpointCommitted> {
    return this.reactor.run((step) => commitCheckpoint(step, commit));
  }

  // ---- tokens

  /** Stores a new token (its hash); resolves once durable. */
  createToken(request: TokenRequest): Promise<TokenRecord> {
    return this.reactor.run((step) => createToken(step, request));
  }

  /** Revokes a token of one of `kinds` (a join token with its hosts' credentials; their agents are disconnected). */
  revokeToken(id: string, kinds: readonly TokenKind[]): Promise<TokenRecord> {
    return this.reactor.run((step) => revokeToken(step, id, kinds));
  }

  // ---- agents

  /**
   * An agent said hello. Returns the attempts it must kill (no longer live) and, when it joined
   * with a join token (`credential` given), the text of the host credential it gets, durable
   * before it is answered.
   */
  async attachHost(
    message: HelloMessage,
    credential?: { parent: string | null },
  ): Promise<{ kill: AttemptRef[]; credential?: string }> {
    const token = credential ? newTokenOf("host") : undefined;
    const kill = await this.reactor.run((step) => {
      if (credential && token)
        issueHostCredential(step, message.name, message.pool, credential.parent, token);
      // Let in by its credential, which was revoked (the host removed) before this step ran: the
      // agent says hello again and is refused then.
      else if (message.credential && !step.state.tokens.credentialOf(message.name, step.now))
        throw new ConflictError(`the host credential of ${message.name} was revoked meanwhile`);
      return attachHost(step, message);
    });
    return { kill, credential: token?.text };
  }

  /**
   * A heartbeat renews the lease and brings facts and progress (hints, not committed); the jobs'
   * progress and requirements files may then decide a stop: performance contracts, self-migration.
   * Resolves once any such decision is committed.
   */
  heartbeat(
    name: string,
    facts: HostFacts,
    progress: HeartbeatMessage["progress"] = [],
    requirements: HeartbeatMessage["requirements"] = [],
  ): Promise<void> {
    const now = this.reactor.now();
    recordHeartbeat(this.state, now, name, facts, progress);
    const margin = policyOf(this.reactor.options.policy).walltimeMarginSeconds;
    const walltime = walltimeDue({ state: this.state, now }, name, margin);
    if (progress.length === 0 && requirements.length === 0 && !walltime) return Promise.resolve();
    return this.reactor.run((step) => {
      if (walltime) leaveBeforeWalltime(step, name, margin);
      followRequirementsFiles(step, name, requirements);
      watchContracts(step, name, progress);
    });
  }

  /** Any message from the agent renews its lease. */
  touch(name: string): void {
    const host = this.state.hosts.get(name);
    if (host) host.record.lastSeen = this.reactor.now();
  }

  /** Removes a host that is gone for good (a pilot that left), if disconnected and running nothing. */
  forgetHost(name: string): Promise<void> {
    return this.reactor.run((step) => {
      const host = step.state.hosts.get(name);
      if (!host || host.connected || host.active.size > 0) return;
      step.state.hosts.delete(name);
      step.change({ op: "deleteHost", name });
      // Its name may be taken again by a new agent with a join token.
      const credential = step.state.tokens.credentialOf(name, step.now);
      if (credential) {
        credential.revokedAt = step.now;
        step.change({ op: "putToken", token: credential });
      }
    });
  }

  detachHost(name: string): void {
    const host = this.state.hosts.get(name);
    if (host) host.connected = false;
  }

  attemptStarted(
    hostName: string,
    jobId: string,
    taskIndex: number,
    attempt: number,
    coordinatorPort?: number,
    rank?: number,
  ): Promise<void> {
    return this.reactor.run((step) =>
      attemptStarted(step, hostName, { jobId, taskIndex, attempt, rank }, coordinatorPort),
    );
  }

  attemptEnded(hostName: string, report: EndedEvent): Promise<void> {
    return this.reactor.run((step) => attemptEnded(step, hostName, report));
  }

  /** Leases and back-offs now (the reactor also does this on its own timer). */
  checkLeases(): void {
    this.reactor.tick();
  }
}
