// The reactor (HyperQueue's reactor.rs): every event is handled by one function of (state, event)
// that changes the state and says what to commit and what to do; here the changes are committed,
// and only then are the effects performed: before the API answers, before an agent is sent a
// start, before a report is acknowledged (guarantee 1).
//
// A commit that fails leaves memory as the store has it: every step handled and not committed (the
// failed batch's, and those handled after it on top of them) is taken back, newest first, before
// any of them hears of the failure. A store that is full (StorageFullError) is survived: the
// requests are refused (the API answers 507), the reports not acknowledged (sent again), and the
// broker goes on, committing again once space is freed. Any other refused commit is fatal.

import { EventEmitter } from "node:events";
import type { EventRecord } from "../../common/model/records.ts";
import { planPass } from "../planner/plan-pass.ts";
import { DISCOVERY_SECONDS } from "../scheduler/policy.ts";
import type { MetaschedulingPolicy } from "../scheduler/view.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import type { JobEntry } from "../state/job-entry.ts";
import type { GroupCommitter } from "../store/group-commit.ts";
import { StorageFullError } from "../store/storage-full.ts";
import { StaleTermError } from "../store/store.ts";
import type { AgentLinks, AttemptPlaced, CheckpointBlobDrop, CheckpointBlobs, Effect } from "./effects.ts";
import { startUndelivered } from "./handlers/agent-reports.ts";
import { applyPlan } from "./handlers/apply-plan.ts";
import { checkpointBlobsDropped } from "./handlers/checkpoints.ts";
import { expireLeases } from "./handlers/leases.ts";
import { CommitsInFlight, jobsChanged, retireJobs } from "./retire-ended.ts";
import { type Handled, handle, type Step } from "./step.ts";

export interface ReactorOptions {
  hostTimeoutSeconds: number;
  now: () => number;
  random: () => number;
  /** What to do when the store refuses a commit (default: exit, so a restart recovers from the store). */
  onFatal?: (error: unknown) => void;
  /** Preemption and rescheduling settings (scheduler/policy.ts); absent fields take the papers' defaults. */
  policy?: Partial<MetaschedulingPolicy>;
}

/** How often leases and back-offs are checked. */
const TICK_MS = 250;

/** After a commit refused for a full store, the next scheduling pass comes this much later. */
export const STORAGE_FULL_RETRY_MS = 1000;

export class Reactor {
  /**
   * `event`: a stored job event, once committed; `job`: a job's state changed; `progress`: tasks of
   * the job (its id) changed state in a commit (not stored: the dashboard's progress bars).
   */
  readonly events = new EventEmitter<{
    event: [EventRecord];
    job: [JobEntry];
    progress: [string];
    placed: [AttemptPlaced];
  }>();
  state: ClusterState;
  readonly options: ReactorOptions;
  readonly #committer: GroupCommitter;
  #links: AgentLinks = { send: () => false, disconnect: () => {} };
  #checkpointBlobs: CheckpointBlobs = { drop: async () => {} };
  #schedulePending = false;
  /** Each job's handled steps not committed yet: a job leaves memory only once none is. */
  readonly #inFlight = new CommitsInFlight();
  /** How to take back each step handled and not committed yet, by its number (in handling order). */
  readonly #uncommitted = new Map<number, () => void>();
  #stepNumber = 0;
  #stopped = false;
  #timer: NodeJS.Timeout | null = null;
  /** When the last plan asked to be looked at again (waiting for a task expected to end). */
  #recheckAt = Number.POSITIVE_INFINITY;
  /** When running work was last held against the hosts (the discovery interval). */
  #discoveredAt = 0;

  constructor(state: ClusterState, committer: GroupCommitter, options: ReactorOptions) {
    this.state = state;
    this.#committer = committer;
    this.options = options;
    // A pass that is due runs before the next batch is taken: the starts it plans for the slots
    // the batch's ends freed are committed with those ends, not one commit later.
    committer.beforeBatch = () => this.#passIfDue();
    committer.onFailed = (error) => this.#takeBackUncommitted(error);
  }

  setLinks(links: AgentLinks): void {
    this.#links = links;
  }

  setCheckpointBlobs(blobs: CheckpointBlobs): void {
    this.#checkpointBlobs = blobs;
  }

  now(): number {
    return this.options.now();
  }

  /**
   * Handles one event: `handler` changes the state and records changes and effects in the step;
   * the result comes back once the changes are committed and the effects performed. A handler
   * that throws changes nothing: its writes are taken back (step.ts), nothing is committed.
   */
  async run<T>(handler: (step: Step) => T): Promise<T> {
    const handled = handle(this.state, this.now(), handler, this.options.random);
    const jobs = jobsChanged(handled.changes);
    this.#inFlight.started(jobs);
    // A pass may plan the freed slot before this commit is done: its own commit comes after this
    // one (commits keep their order) and its starts are sent only once committed.
    if (handled.schedule) this.kick();
    await this.#commit(handled, jobs);
    return handled.result;
  }

  /**
   * Resolves once every change handled so far is committed: what is read after it (the state in
   * memory, the events in the store) holds nothing the store does not, and agrees with itself.
   */
  committed(): Promise<void> {
    return this.#committer.flush();
  }

  async #commit(step: Handled<unknown>, jobs: ReadonlySet<string>): Promise<void> {
    if (step.changes.length > 0) {
      const number = ++this.#stepNumber;
      this.#uncommitted.set(number, step.rollback);
      try {
        await this.#committer.push(step.changes);
        this.#uncommitted.delete(number);
      } catch (error) {
        // Taken back already (#takeBackUncommitted), with every step handled after it.
        this.#uncommitted.delete(number);
        retireJobs(this.state, this.#inFlight.done(jobs));
        if (error instanceof StorageFullError) {
          // The tasks a plan placed are queued again: a pass looks at them once more, later.
          this.#recheckAt = Math.min(this.#recheckAt, this.now() + STORAGE_FULL_RETRY_MS);
        } else {
          // Fatal (this core stops leading).
          this.#fatal(error);
        }
        throw error;
      }
      for (const change of step.changes)
        if (change.op === "addEvent") this.events.emit("event", change.event);
      if (this.events.listenerCount("progress") > 0) {
        const changed = new Set<string>();
        for (const change of step.changes)
          if (change.op === "putTasks") for (const task of change.tasks) changed.add(task.jobId);
          else if (change.op === "putNewTasks") changed.add(change.jobId);
        for (const jobId of changed) this.events.emit("progress", jobId);
      }
    }
    const drops: Promise<void>[] = [];
    for (const effect of step.effects) {
      if (effect.kind === "dropCheckpointBlobs") drops.push(this.#dropCheckpointBlobs(effect.drop));
      else this.#perform(effect);
    }
    retireJobs(this.state, this.#inFlight.done(jobs));
    // Most steps drop no checkpoint blob: no promise made for nothing (a step runs per report).
    if (drops.length > 0) await Promise.all(drops);
  }

  /**
   * A batch failed: every step not committed (its own, and those handled after them, queued
   * behind it) is taken back, newest first, and the queued ones abandoned, so that memory is as
   * the store has it before any of them hears of the failure.
   */
  #takeBackUncommitted(error: unknown): void {
    const rollbacks = [...this.#uncommitted.values()];
    this.#uncommitted.clear();
    for (let i = rollbacks.length - 1; i >= 0; i--) rollbacks[i]();
    this.#committer.abandonQueued(error);
  }

  /** Deletes the blobs, then lets uploads of those objects in again (whether or not all went). */
  async #dropCheckpointBlobs(drop: CheckpointBlobDrop): Promise<void> {
    try {
      await this.#checkpointBlobs.drop(drop);
    } catch {
      // A blob left behind is only space: the job's removal takes it.
    }
    await this.run((step) => checkpointBlobsDropped(step, drop)).catch(() => {});
  }

  #perform(effect: Effect): void {
    switch (effect.kind) {
      case "send": {
        const sent = this.#links.send(effect.host, effect.message);
        const message = effect.message;
        if (!sent && message.type === "start") {
          void this.run((step) =>
            startUndelivered(step, effect.host, {
              jobId: message.jobId,
              taskIndex: message.taskIndex,
              attempt: message.attempt,
            }),
          ).catch(() => {});
        }
        return;
      }
      case "disconnect":
        this.#links.disconnect(effect.host);
        return;
      case "jobChanged":
        this.events.emit("job", effect.job);
        return;
      case "dropCheckpointBlobs":
        void this.#dropCheckpointBlobs(effect.drop);
        return;
      case "placed":
        this.events.emit("placed", effect.placed);
        return;
    }
  }

  start(): void {
    this.#timer = setInterval(() => this.#timerTick(), TICK_MS);
    this.#timer.unref();
    this.kick();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
  }

  /**
   * Leases and back-offs; also called directly by tests with their own clock. Run from the timer,
   * the leases are looked at once the event loop has read its sockets (setImmediate runs after the
   * poll phase): after a long stretch of work (a pass over a huge backlog, a long collection) the
   * timers run before the sockets are read, and every agent whose heartbeats wait unread in its
   * socket would be taken for lost.
   */
  tick(): void {
    this.#expireLeases();
    this.#checkBackoffs();
  }

  #timerTick(): void {
    setImmediate(() => {
      if (!this.#stopped) this.#expireLeases();
    });
    this.#checkBackoffs();
  }

  #expireLeases(): void {
    void this.run((step) => expireLeases(step, this.options.hostTimeoutSeconds)).catch(() => {});
  }

  #checkBackoffs(): void {
    const now = this.now();
    const discoveryMs = (this.options.policy?.discoverySeconds ?? DISCOVERY_SECONDS) * 1000;
    if (
      this.state.promoteDueBackoffs(now) ||
      now >= this.#recheckAt ||
      now - this.#discoveredAt >= discoveryMs
    ) {
      this.kick();
    }
  }

  /** Asks for a scheduling pass soon; passes never overlap and run after the current event. */
  kick(): void {
    if (this.#schedulePending || this.#stopped) return;
    this.#schedulePending = true;
    setImmediate(() => this.#passIfDue());
  }

  /** Runs the pass asked for (kick), unless it ran already (before a commit's batch was taken). */
  #passIfDue(): void {
    if (!this.#schedulePending || this.#stopped) return;
    this.#schedulePending = false;
    this.#schedulePass();
  }

  #schedulePass(): void {
    const now = this.now();
    this.#discoveredAt = now;
    const plan = planPass(this.state, now, this.options.policy);
    this.#recheckAt = plan?.recheckAt ?? Number.POSITIVE_INFINITY;
    if (plan && (plan.place.length > 0 || plan.stop.length > 0 || plan.preempt.length > 0)) {
      void this.run((step) => applyPlan(step, plan)).catch(() => {});
    }
  }

  /** The store refused a write of this server's (another server leads): stop, as after a failed commit. */
  fatal(error: unknown): void {
    this.#fatal(error);
  }

  #fatal(error: unknown): void {
    if (this.options.onFatal) {
      this.options.onFatal(error);
      return;
    }
    // The store refused a commit (or another server took the lead): the in-memory state is now
    // ahead of the durable one, so the only safe course is to stop and recover from the store.
    const why = error instanceof StaleTermError ? "another server took the lead" : "store commit failed";
    console.error(`steward: ${why}, exiting so that a restart recovers from the store:`, error);
    process.exit(70);
  }
}
