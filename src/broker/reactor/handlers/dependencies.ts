// dependsOn (model/dependencies.ts): which waiting tasks of a job may go, and which can never run.
// A job's waiting tasks are looked at again when a job they depend on ends, and, for `tasks: same`,
// when a task of it ends; those whose dependencies are met become pending, those one of whose
// dependencies can no longer be met end `cancelled`, with an event naming that dependency.

import {
  combinedVerdict,
  type Dependency,
  type DependencyVerdict,
  dependenciesOf,
  dependencyIds,
  dependencyVerdict,
} from "../../../common/model/dependencies.ts";
import type { JobState, TaskState } from "../../../common/model/states.ts";
import { formatTaskList } from "../../../common/model/task-list.ts";
import type { ClusterState } from "../../state/cluster-state.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { refreshJobState } from "./job-state.ts";

/** Task states of dependencies that left memory, read from the store for a submit (by job id). */
export type LoadedTaskStates = ReadonlyMap<string, readonly TaskState[]>;

/** A dependency that can never be met, and the tasks (all that waited, or some) it cancels. */
export interface UnmetDependency {
  dependency: Dependency;
  /** How the job (or, for `tasks: same`, its tasks) ended; null: it was removed. */
  state: JobState | null;
  tasks: number[];
}

export interface WaitingVerdicts {
  release: number[];
  cancel: UnmetDependency[];
}

/**
 * The verdict of a `tasks: same` dependency for task `index`: from the other job in memory, from
 * states read from the store, or from its header. A job that left memory with tasks ended in
 * different states had each dependent task looked at when its task ended (those that could not go
 * were cancelled then), so a task still waiting on it is met.
 */
function sameTaskState(
  state: ClusterState,
  dependency: Dependency,
  index: number,
  loaded?: LoadedTaskStates,
): TaskState | "met" | undefined {
  const job = state.jobs.get(dependency.job);
  if (job) return job.tasks[index]?.state;
  const known = loaded?.get(dependency.job);
  if (known) return known[index];
  const header = state.ended.get(dependency.job);
  if (!header) return undefined;
  for (const each of ["succeeded", "failed", "cancelled"] as const)
    if (header.counts[each] === header.taskCount) return each;
  return "met";
}

/** What becomes of the tasks `indexes` of a job with these dependencies (none decided: they wait). */
export function waitingVerdicts(
  state: ClusterState,
  dependencies: readonly Dependency[],
  indexes: Iterable<number>,
  loaded?: LoadedTaskStates,
): WaitingVerdicts {
  const verdicts: WaitingVerdicts = { release: [], cancel: [] };
  const whole: DependencyVerdict[] = [];
  const same: Dependency[] = [];
  for (const dependency of dependencies) {
    if (dependency.sameTasks) {
      same.push(dependency);
      continue;
    }
    const jobState = state.jobState(dependency.job);
    const verdict = dependencyVerdict(dependency.when, jobState);
    if (verdict === "never") {
      verdicts.cancel.push({ dependency, state: jobState ?? null, tasks: [...indexes] });
      return verdicts;
    }
    whole.push(verdict);
  }
  const wholeVerdict = combinedVerdict(whole);
  const unmet = new Map<string, UnmetDependency>();
  for (const index of indexes) {
    let verdict = wholeVerdict;
    for (const dependency of same) {
      const taskState = sameTaskState(state, dependency, index, loaded);
      const each = taskState === "met" ? "met" : dependencyVerdict(dependency.when, taskState);
      if (each === "wait") verdict = "wait";
      if (each !== "never") continue;
      verdict = "never";
      const key = `${dependency.job}\u0000${taskState ?? ""}`;
      let entry = unmet.get(key);
      if (!entry) {
        entry = { dependency, state: taskState === "met" ? null : (taskState ?? null), tasks: [] };
        unmet.set(key, entry);
      }
      entry.tasks.push(index);
      break;
    }
    if (verdict === "met") verdicts.release.push(index);
  }
  verdicts.cancel.push(...unmet.values());
  return verdicts;
}

/** The event naming a dependency that can never be met, and the tasks it cancelled. */
export function recordUnmet(step: Step, job: JobEntry, { dependency, state, tasks }: UnmetDependency): void {
  step.event(job, {
    kind: "dependency.unmet",
    data: {
      dependency: dependency.job,
      when: dependency.when,
      state,
      tasks: dependency.sameTasks ? formatTaskList(tasks) : null,
    },
  });
}

/** Records what cannot be met: the tasks end cancelled, an event names the dependency. */
function cancelUnmet(step: Step, job: JobEntry, unmet: readonly UnmetDependency[]): void {
  for (const entry of unmet) {
    if (entry.tasks.length === 0) continue;
    step.write.updateTasks(
      job,
      entry.tasks.map((index) => job.tasks[index]),
      { state: "cancelled" },
    );
    recordUnmet(step, job, entry);
  }
}

/**
 * Looks at a job's waiting tasks again: those whose dependencies are met become pending, those one
 * of whose dependencies can never be met end cancelled. `ended`: the dependency whose end asks for
 * this (the history says so when tasks go); absent for a task's end under `tasks: same`.
 */
export function settleWaiting(step: Step, job: JobEntry, ended?: JobEntry): void {
  const waiting: number[] = [];
  for (const task of job.tasks) if (task.state === "waiting") waiting.push(task.index);
  if (waiting.length === 0) return;
  const dependencies = dependenciesOf(job.record.spec.dependsOn);
  const { release, cancel } = waitingVerdicts(step.state, dependencies, waiting);
  if (release.length > 0) {
    if (ended)
      step.event(job, { kind: "dependencies", data: { dependency: ended.id, state: ended.record.state } });
    step.write.updateTasks(
      job,
      release.map((index) => job.tasks[index]),
      { state: "pending" },
    );
    step.schedule = true;
  }
  cancelUnmet(step, job, cancel);
  if (release.length > 0 || cancel.length > 0) refreshJobState(step, job);
}

/** A job ended: the jobs waiting on it go, or are cancelled when they can never run. */
export function releaseDependents(step: Step, ended: JobEntry): void {
  for (const job of step.state.jobs.values()) {
    if (job === ended || job.isEnded()) continue;
    // Waiting tasks are in a waiting job, a held one, or one waiting on another's tasks one by one.
    const mayWait =
      job.record.state === "waiting" ||
      job.record.held ||
      step.state.sameTaskDependents.get(ended.id)?.has(job);
    if (!mayWait) continue;
    if (!dependencyIds(job.record.spec.dependsOn).includes(ended.id)) continue;
    settleWaiting(step, job, ended);
  }
  step.schedule = true;
}

/** Tasks of a job changed: jobs waiting on its tasks one by one (`tasks: same`) look again. */
export function releaseSameTaskDependents(step: Step, job: JobEntry): void {
  const dependents = step.state.sameTaskDependents.get(job.id);
  if (!dependents) return;
  for (const dependent of [...dependents]) if (!dependent.isEnded()) settleWaiting(step, dependent);
}

/** The tasks of a new job, with dependencies, as they start: pending, waiting or cancelled. */
export function initialVerdicts(
  state: ClusterState,
  dependencies: readonly Dependency[],
  count: number,
  loaded?: LoadedTaskStates,
): WaitingVerdicts {
  const indexes = {
    *[Symbol.iterator]() {
      for (let i = 0; i < count; i++) yield i;
    },
  };
  return waitingVerdicts(state, dependencies, indexes, loaded);
}
