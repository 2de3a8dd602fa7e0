// The read model: what the API (through its port, server/api-reads.ts), the agents' gateway and the
// pools ask of the cluster, answered from the reactor's state (and, for a job that ended and left
// memory, from the store). Nothing here changes the state; the commands (reactor/commands/) do,
// each through one handler.

import type { JobSpec } from "../../common/model/job-spec.ts";
import type {
  HostListing,
  JobHead,
  JobHeader,
  RestartManifest,
  SecretListing,
  WorkflowRecord,
} from "../../common/model/records.ts";
import type { JobState, TaskState } from "../../common/model/states.ts";
import { explainDraft, explainEnded, explainJob } from "../planner/explain-job.ts";
import type { JobExplanation } from "../scheduler/explain.ts";
import { type ShareLine, shareLines } from "../scheduler/fair-share-tree.ts";
import { attemptRanksOn, liveRanksOn } from "../state/agent-binding.ts";
import { type ClusterState, submissionKey } from "../state/cluster-state.ts";
import { entryOfStored, type JobEntry } from "../state/job-entry.ts";
import { headOf } from "../state/job-header.ts";
import { restartManifest } from "../state/restart-manifest.ts";
import type { TokenRegistry } from "../state/token-registry.ts";
import type { Store, StoredJob } from "../store/store.ts";
import { NotFoundError } from "./errors.ts";
import { secretListing } from "./handlers/secrets.ts";
import { admitSpec, checkedDependencies } from "./handlers/submit.ts";
import type { TaskRead } from "./ports.ts";
import type { Reactor } from "./reactor.ts";

export class ReadModel {
  readonly #reactor: Reactor;
  readonly #store: Store;
  readonly #lowestInFlight: () => number | null;

  /**
   * `lowestInFlight` answers the lowest job id handed out to a submit that has not made its job
   * yet (reactor/id-block.ts), or null: listings stop below it.
   */
  constructor(reactor: Reactor, store: Store, lowestInFlight: () => number | null = () => null) {
    this.#reactor = reactor;
    this.#store = store;
    this.#lowestInFlight = lowestInFlight;
  }

  /** The state as it is now (recovery replaces it, so it is read at each call). */
  get #state(): ClusterState {
    return this.#reactor.state;
  }

  /** The reactor's clock. */
  now(): number {
    return this.#reactor.now();
  }

  /** Events and progress as they are committed (the event stream). */
  get events(): Reactor["events"] {
    return this.#reactor.events;
  }

  /** What the pools read: the hosts and the queue. */
  get cluster(): Pick<ClusterState, "hosts" | "queue"> {
    return this.#state;
  }

  /** The job of that id if it is in memory (live, or ended and not yet retired), or undefined. */
  findJob(id: string): JobEntry | undefined {
    return this.#state.jobs.get(id);
  }

  /** A job in memory (the agents' routes: only a live job's attempts move files). */
  job(id: string): JobEntry {
    const job = this.#state.jobs.get(id);
    if (!job) throw new NotFoundError(`no job ${id}`);
    return job;
  }

  /**
   * Any job with its tasks and attempts: from memory, or from the store once it has ended and left.
   * Read once the changes handled so far are committed: a job is never shown in a state the store
   * does not hold yet (a crash would take it back), nor without the events that came with it.
   */
  async readJob(id: string): Promise<JobEntry> {
    await this.#reactor.committed();
    const job = this.#state.jobs.get(id);
    if (job) return job;
    const stored = this.#state.ended.has(id) ? await this.#store.loadJob(id) : null;
    if (!stored) throw new NotFoundError(`no job ${id}`);
    return entryOfStored(stored);
  }

  /**
   * A job without its tasks and attempts (what its summary shows): from memory, or for a job that
   * ended and left it, the header kept here and the job's record alone from the store; a
   * million-task array's rows are not read to show its counts. Read once committed, as readJob.
   */
  async readJobHead(id: string): Promise<JobHead> {
    await this.#reactor.committed();
    const job = this.#state.jobs.get(id);
    if (job) return headOf(job);
    const header = this.#state.ended.get(id);
    const record = header ? await this.#store.loadJobRecord(id) : null;
    if (!header || !record) throw new NotFoundError(`no job ${id}`);
    return { header, record };
  }

  /**
   * One task of any job with its attempts: from memory, or from the store (that task's rows alone)
   * once the job has ended and left it. Read once committed, as readJob.
   */
  async readTask(id: string, index: number): Promise<TaskRead> {
    await this.#reactor.committed();
    const job = this.#state.jobs.get(id);
    if (job) {
      const task = job.tasks[index];
      if (!task) throw new NotFoundError(`job ${id} has no task ${index}`);
      return { task, attempts: job.attempts.get(index) ?? [], progress: job.progress.get(index) };
    }
    if (!this.#state.ended.has(id)) throw new NotFoundError(`no job ${id}`);
    const stored = await this.#store.loadTask(id, index);
    if (!stored) throw new NotFoundError(`job ${id} has no task ${index}`);
    return { ...stored, progress: undefined };
  }

  /**
   * The state of each task of any job, by index: from memory, or from the store (the states alone)
   * once the job has ended and left it. Read once committed, as readJob.
   */
  async readTaskStates(id: string): Promise<readonly TaskState[]> {
    await this.#reactor.committed();
    const job = this.#state.jobs.get(id);
    if (job) return job.tasks.map((task) => task.state);
    if (!this.#state.ended.has(id)) throw new NotFoundError(`no job ${id}`);
    return this.#store.loadTaskStates(id);
  }

  /** A job that ended and left memory, as the store holds it (with its checkpoint parts); null when none. */
  async storedJob(id: string): Promise<StoredJob | null> {
    return this.#state.ended.has(id) ? this.#store.loadJob(id) : null;
  }

  /** Whether the job ended and left memory (only its header is here). */
  retired(id: string): boolean {
    return !this.#state.jobs.has(id) && this.#state.ended.has(id);
  }

  /** A job's header (the line `ps` prints), live or ended; undefined when there is no such job. */
  header(id: string): JobHeader | undefined {
    return this.#state.header(id);
  }

  /** A job's owner, live or ended. */
  jobOwner(id: string): string | undefined {
    return this.#state.jobOwner(id);
  }

  /** The workflow this owner submitted with this Idempotency-Key, or undefined. */
  workflowSubmission(owner: string, submitKey: string): WorkflowRecord | undefined {
    return this.#state.workflowSubmissions.get(submissionKey(owner, submitKey));
  }

  /** A workflow by its id, or undefined. */
  workflow(id: string): WorkflowRecord | undefined {
    return this.#state.workflows.get(id);
  }

  /** Every workflow, whatever became of its jobs. */
  listWorkflows(): WorkflowRecord[] {
    return [...this.#state.workflows.values()];
  }

  /** A user's secrets by name, without their values. */
  secretsOf(owner: string): SecretListing[] {
    return this.#state.secrets.of(owner).map(secretListing);
  }

  /** The tokens this server gave out (API tokens, join tokens, host credentials). */
  get tokens(): TokenRegistry {
    return this.#state.tokens;
  }

  /**
   * Every job's header: those in memory, then those that ended and left it. Without `withRetired`,
   * only those in memory (every job not ended is: a listing of those does not walk the history).
   * Jobs whose id is above one a submit still has in flight are left out until it settles.
   */
  listJobs(withRetired = true): JobHeader[] {
    const headers: JobHeader[] = [];
    // A job above an id still in flight waits for it: a client paging with `after=` past the job
    // listed would never see the one made below it a moment later (id-block.ts).
    const below = this.#lowestInFlight();
    const listed = below === null ? () => true : (id: string) => !(Number(id) >= below);
    for (const job of this.#state.jobs.values()) if (listed(job.id)) headers.push(job.header);
    if (withRetired)
      for (const header of this.#state.ended.values()) if (listed(header.id)) headers.push(header);
    return headers;
  }

  /** How many jobs there are in each state, the retired ones counted from their columns. */
  jobCountsByState(): Map<JobState, number> {
    const counts = this.#state.ended.countByState();
    for (const job of this.#state.jobs.values())
      counts.set(job.record.state, (counts.get(job.record.state) ?? 0) + 1);
    return counts;
  }

  /**
   * The fair-share tree as lines at this moment (`steward share`): every line, or with `viewer`
   * that user's own line and the accounts above it (scheduler/fair-share-tree.ts shareLines).
   */
  shares(viewer?: string): { at: number; halfLifeSeconds: number; lines: ShareLine[] } {
    const now = this.now();
    const owners = this.#state.owners;
    const root = owners.tree(now, viewer === undefined ? [] : [viewer]);
    return { at: now, halfLifeSeconds: owners.settings.halfLifeSeconds, lines: shareLines(root, viewer) };
  }

  listHosts(): HostListing[] {
    return this.#state.hostList();
  }

  /**
   * Every host as the API shows it, read once the changes handled so far are committed (as
   * readJob): a host is not shown attached before its attach is durable.
   */
  async readHosts(): Promise<HostListing[]> {
    await this.#reactor.committed();
    return this.#state.hostList();
  }

  /** A host as the API shows it: its record, free slots, whether attached, its live attempts. */
  hostOf(name: string): HostListing | undefined {
    return this.#state.hostList().find((host) => host.name === name);
  }

  /**
   * Why a job's tasks wait and what the next pass does for it (planner/explain-job.ts); of a job
   * that has ended, how it ended, from its events.
   */
  async explain(id: string, viewer: string | null = null): Promise<JobExplanation> {
    const job = await this.readJob(id);
    if (job.isEnded()) return explainEnded(job, await this.#store.events(id));
    return explainJob(this.#state, job, this.#reactor.now(), this.#reactor.options.policy, viewer);
  }

  /**
   * The job file as a submit of it by `owner` now would be admitted (its QoS tier allowed, the
   * limits of the tier and the group; a tier's wall limit given): refused with the submit's 400
   * or 429 (handlers/submit.ts admitSpec). Changes nothing.
   */
  admitDraft(spec: JobSpec, owner: string, allowedQos: readonly string[] | null): JobSpec {
    return admitSpec(this.#state, spec, owner, allowedQos);
  }

  /**
   * What explain would say of a job file submitted now by `owner`, without submitting it: a job
   * entry the state never holds. Its dependencies are checked as a submit checks them (the same
   * 400); `dependencyOwner` and `viewer` are as for submit and explain.
   */
  explainDraft(
    spec: JobSpec,
    owner: string,
    dependencyOwner: string | null,
    viewer: string | null = null,
  ): { job: JobEntry; explanation: JobExplanation } {
    const state = this.#state;
    checkedDependencies(state, spec, dependencyOwner);
    return explainDraft(state, spec, owner, this.#reactor.now(), this.#reactor.options.policy, viewer);
  }

  /**
   * The ranks `host` runs of an attempt in memory (live or ended): none when the attempt is
   * unknown or placed elsewhere. What a host may write of an attempt (outputs, logs, checkpoints).
   */
  ranksOn(host: string, jobId: string, taskIndex: number, number: number): number[] {
    return attemptRanksOn(this.#state, host, jobId, taskIndex, number);
  }

  /** The ranks `host` runs of a job's live attempts (of one task, if given): what it may read of the job. */
  liveRanksOn(host: string, jobId: string, taskIndex?: number): number[] {
    return liveRanksOn(this.#state, host, jobId, taskIndex);
  }

  /** Whether an attempt is live (fencing by attempt identity): only a live attempt may upload or commit. */
  isCurrent(jobId: string, taskIndex: number, number: number): boolean {
    return this.#state.liveAttempt(jobId, taskIndex, number) !== undefined;
  }

  /**
   * Whether a live attempt may upload outputs: not once its task has a result, which a replica that
   * won the race gave it (guarantee 4: the losers' outputs are never stored, let alone committed).
   */
  acceptsOutputs(jobId: string, taskIndex: number, number: number): boolean {
    const live = this.#state.liveAttempt(jobId, taskIndex, number);
    return live !== undefined && live.job.tasks[taskIndex]?.state === "running";
  }

  /** Of these checkpoint objects of a task, those this server does not know as stored. */
  unknownCheckpointObjects(jobId: string, taskIndex: number, shas: readonly string[]): string[] {
    const stored = this.job(jobId).checkpointsOf(taskIndex).storedObjects();
    return shas.filter((sha) => !stored.has(sha));
  }

  /** The manifest a restarted attempt of the task gets (a multi-node job's: the rank's), or null. */
  restartManifest(jobId: string, taskIndex: number, rank?: number): RestartManifest | null {
    return restartManifest(this.job(jobId), taskIndex, rank);
  }

  /** The job an earlier submit with this owner's key made, if any (one that ended is read from the store). */
  async findSubmission(owner: string, submitKey: string): Promise<JobEntry | undefined> {
    const live = this.#state.submissions.get(submissionKey(owner, submitKey));
    if (live) return live;
    const id = await this.#store.findSubmission(owner, submitKey);
    if (id === null) return undefined;
    return this.readJob(id).catch((error: unknown) => {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    });
  }
}
