// Handlers as pure functions: (state, event, now) -> {changes, effects}, with a clock the test
// sets, no store and no timers. Each change is copied when it is handled, as a store would keep
// it, so that `recovered()` is the state a broker would rebuild from what was recorded: a change
// made in memory and not recorded shows as a difference (test/unit/broker/reactor/handlers/state-round-trip.test.ts).

import { planPass } from "../../src/broker/planner/plan-pass.ts";
import type { Effect } from "../../src/broker/reactor/effects.ts";
import { type AppliedPlan, applyPlan } from "../../src/broker/reactor/handlers/apply-plan.ts";
import { heartbeatReported } from "../../src/broker/reactor/handlers/heartbeat.ts";
import { jobsChanged, retireJobs } from "../../src/broker/reactor/retire-ended.ts";
import { type Handled, handle, type Step } from "../../src/broker/reactor/step.ts";
import { policyOf } from "../../src/broker/scheduler/policy.ts";
import type { MetaschedulingPolicy } from "../../src/broker/scheduler/view.ts";
import { ClusterState } from "../../src/broker/state/cluster-state.ts";
import { recoverState } from "../../src/broker/state/recover.ts";
import { heartbeatSeen } from "../../src/broker/state/soft-state.ts";
import type { Change, StoreSnapshot } from "../../src/broker/store/store.ts";
import type { HostFacts } from "../../src/common/model/host-facts.ts";
import { attemptKey } from "../../src/common/model/ids.ts";
import { newTask } from "../../src/common/model/new-records.ts";
import type {
  AttemptRecord,
  CheckpointPart,
  EventRecord,
  HostRecord,
  JobRecord,
  TaskRecord,
  TokenRecord,
  WorkflowRecord,
} from "../../src/common/model/records.ts";
import type { HeartbeatMessage, ServerMessage } from "../../src/common/protocol/messages.ts";
import { InjectedFault, throwAtWrite } from "./throwing-writes.ts";

export type StartSent = Extract<ServerMessage, { type: "start" }> & { host: string };
export type StopSent = Extract<ServerMessage, { type: "stop" }> & { host: string };

export class HandlerBench {
  state: ClusterState;
  now = 1_000_000;
  policy: Partial<MetaschedulingPolicy>;
  /** Every change handled so far, copied when it was handled. */
  readonly recorded: Change[] = [];
  /** Every effect handled so far, in order (a test may clear it). */
  effects: Effect[] = [];
  /** Whether a step asked for a scheduling pass since the last one. */
  #passWanted = false;

  constructor(state: ClusterState = new ClusterState(), policy: Partial<MetaschedulingPolicy> = {}) {
    this.state = state;
    this.policy = policy;
  }

  /**
   * Handles one event at `now`, as the reactor does less the store: the changes are kept as
   * recorded, and jobs the step ended leave memory (their commit counts as done).
   */
  run<T>(handler: (step: Step) => T): Handled<T> {
    const handled = handle(this.state, this.now, handler, () => 0.5);
    this.recorded.push(...structuredClone(handled.changes));
    this.effects.push(...handled.effects);
    // As the reactor does once a step's commit is done (none is in flight here).
    retireJobs(this.state, jobsChanged(handled.changes));
    if (handled.schedule) this.#passWanted = true;
    return handled;
  }

  /**
   * Handles one event once for each write it makes, made to throw at that write, and once more
   * made to throw after its last (throwing-writes.ts); `check` is called after each throw. Nothing
   * is recorded: each throw should leave the state as it was. Stops early at an error of the
   * handler's own, which handling it for real then meets too. Returns how many writes it made.
   */
  throwAtEachWrite<T>(handler: (step: Step) => T, check: (fault: InjectedFault) => void): number {
    for (let k = 1; ; k++) {
      try {
        handle(
          this.state,
          this.now,
          (step) => {
            throwAtWrite(step.write, k);
            handler(step);
            throw new InjectedFault(null);
          },
          () => 0.5,
        );
      } catch (error) {
        if (!(error instanceof InjectedFault)) return k - 1;
        check(error);
        if (error.write === null) return k - 1;
      }
    }
  }

  /** Runs the scheduling passes steps asked for, as the reactor does after them. */
  settle(): void {
    for (let i = 0; i < 5 && this.#passWanted; i++) {
      this.#passWanted = false;
      this.schedule();
    }
  }

  /** One scheduling pass: the plan made from the state, applied in a step of its own. */
  schedule(): Handled<AppliedPlan> | null {
    const plan = planPass(this.state, this.now, this.policy);
    if (!plan) return null;
    return this.run((step) => applyPlan(step, plan));
  }

  /** A heartbeat as Core takes it: its soft state noted (src/broker/state/soft-state.ts), then what it decides handled. */
  heartbeat(
    host: string,
    facts: HostFacts,
    progress: HeartbeatMessage["progress"] = [],
    requirements: HeartbeatMessage["requirements"] = [],
  ): Handled<void> {
    heartbeatSeen(this.state, this.now, host, facts, progress);
    const margin = policyOf(this.policy).walltimeMarginSeconds;
    return this.run((step) => heartbeatReported(step, host, progress, requirements, margin));
  }

  /** A broker restart: a bench over the state rebuilt from the changes recorded so far, at the same time. */
  restart(): HandlerBench {
    const restarted = new HandlerBench(this.recovered(), this.policy);
    restarted.now = this.now;
    restarted.recorded.push(...this.recorded);
    return restarted;
  }

  /** Starts sent so far (or by one step's effects). */
  starts(effects: readonly Effect[] = this.effects): StartSent[] {
    const starts: StartSent[] = [];
    for (const effect of effects)
      if (effect.kind === "send" && effect.message.type === "start")
        starts.push({ host: effect.host, ...effect.message });
    return starts;
  }

  /** Stops sent so far (or by one step's effects). */
  stops(effects: readonly Effect[] = this.effects): StopSent[] {
    const stops: StopSent[] = [];
    for (const effect of effects)
      if (effect.kind === "send" && effect.message.type === "stop")
        stops.push({ host: effect.host, ...effect.message });
    return stops;
  }

  /** The events recorded so far (of one job, when given), oldest first. */
  events(jobId?: string): EventRecord[] {
    const events: EventRecord[] = [];
    for (const change of this.recorded)
      if (change.op === "addEvent" && (jobId === undefined || change.event.jobId === jobId))
        events.push(change.event);
    return events;
  }

  /** What a store holds after the changes recorded so far (a full load). */
  stored(): StoreSnapshot {
    return snapshotOf(this.recorded);
  }

  /** The state a broker would rebuild at `now` from the changes recorded so far. */
  recovered(): ClusterState {
    return recoverState(this.stored(), this.now, this.state.owners.settings, this.state.qos);
  }
}

/** The records a store holds once it has applied `changes` in order (puts are upserts). */
export function snapshotOf(changes: readonly Change[]): StoreSnapshot {
  const jobs = new Map<string, JobRecord>();
  const tasks = new Map<string, TaskRecord>();
  const attempts = new Map<string, AttemptRecord>();
  const hosts = new Map<string, HostRecord>();
  const tokens = new Map<string, TokenRecord>();
  const parts = new Map<string, CheckpointPart>();
  const workflows = new Map<string, WorkflowRecord>();
  const meta: Record<string, string> = {};
  const partKey = (jobId: string, taskIndex: number, rank: number, generation: number) =>
    `${jobId}/${taskIndex}/${rank}/${generation}`;
  for (const change of changes) {
    switch (change.op) {
      case "putJob":
        jobs.set(change.job.id, change.job);
        break;
      case "putTasks":
        for (const task of change.tasks) tasks.set(`${task.jobId}/${task.index}`, task);
        break;
      case "putNewTasks":
        for (let index = 0; index < change.count; index++)
          tasks.set(`${change.jobId}/${index}`, newTask(change.jobId, index, change.state));
        break;
      case "putAttempt": {
        const { jobId, taskIndex, number } = change.attempt;
        attempts.set(attemptKey(jobId, taskIndex, number), change.attempt);
        break;
      }
      case "addEvent":
        break;
      case "putHost":
        hosts.set(change.host.name, change.host);
        break;
      case "deleteHost":
        hosts.delete(change.name);
        break;
      case "putToken":
        tokens.set(change.token.id, change.token);
        break;
      case "putCheckpointPart": {
        const { jobId, taskIndex, rank, generation } = change.part;
        parts.set(partKey(jobId, taskIndex, rank, generation), change.part);
        break;
      }
      case "deleteCheckpointPart":
        parts.delete(partKey(change.jobId, change.taskIndex, change.rank, change.generation));
        break;
      case "deleteJob": {
        jobs.delete(change.jobId);
        const owned = (each: { jobId: string }) => each.jobId === change.jobId;
        for (const [key, task] of tasks) if (owned(task)) tasks.delete(key);
        for (const [key, attempt] of attempts) if (owned(attempt)) attempts.delete(key);
        for (const [key, part] of parts) if (owned(part)) parts.delete(key);
        break;
      }
      case "setMeta":
        meta[change.key] = change.value;
        break;
      case "putWorkflow":
        workflows.set(change.workflow.id, change.workflow);
        break;
    }
  }
  return {
    jobs: [...jobs.values()].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)),
    tasks: [...tasks.values()],
    attempts: [...attempts.values()],
    hosts: [...hosts.values()],
    tokens: [...tokens.values()],
    meta,
    checkpointParts: [...parts.values()],
    workflows: [...workflows.values()],
  };
}
