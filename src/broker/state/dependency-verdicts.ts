// Which waiting tasks of a job may go, and which can never run, for its dependencies (dependsOn,
// model/dependencies.ts) as the state stands: read only. The handlers (reactor/handlers/
// dependencies.ts) act on the verdicts; a submit's dry run (planner/explain-job.ts) reads them too.

import {
  combinedVerdict,
  type Dependency,
  type DependencyVerdict,
  dependencyVerdict,
} from "../../common/model/dependencies.ts";
import type { JobState, TaskState } from "../../common/model/states.ts";
import type { ClusterState } from "./cluster-state.ts";
import type { JobDependencies } from "./job-entry.ts";

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

/**
 * How the tasks of a new job with these dependencies start: pending, waiting, or cancelled by a
 * dependency that can never be met (`verdicts` null: no dependency, all pending).
 */
export function initialTaskStates(
  state: ClusterState,
  dependencies: readonly Dependency[],
  count: number,
  loaded?: LoadedTaskStates,
): { states: TaskState[]; verdicts: WaitingVerdicts | null } {
  const verdicts = dependencies.length > 0 ? initialVerdicts(state, dependencies, count, loaded) : null;
  const states: TaskState[] = new Array(count).fill(verdicts ? "waiting" : "pending");
  for (const index of verdicts?.release ?? []) states[index] = "pending";
  for (const unmet of verdicts?.cancel ?? []) for (const index of unmet.tasks) states[index] = "cancelled";
  return { states, verdicts };
}

/**
 * Where a job's waiting tasks surely still wait now that `ended` has ended: the index of a
 * whole-job dependency that still waits, when none on `ended` can never be met; -1 when the
 * verdicts must be worked out in full (`tasks: same`, a dependency that can never be met, or none
 * left waiting). The scan starts at `hint` (where one waited last time) and goes round, so a
 * fan-in of n dependencies that end about in order costs O(n) in all, not O(n) each.
 */
export function stillWaitingAt(
  state: ClusterState,
  dependencies: JobDependencies,
  ended: string,
  hint: number,
): number {
  if (dependencies.sameTasks) return -1;
  for (const dependency of dependencies.byJob.get(ended) ?? [])
    if (dependencyVerdict(dependency.when, state.jobState(dependency.job)) === "never") return -1;
  const { list } = dependencies;
  for (let step = 0; step < list.length; step++) {
    const index = (hint + step) % list.length;
    const verdict = dependencyVerdict(list[index].when, state.jobState(list[index].job));
    if (verdict === "wait") return index;
    if (verdict === "never") return -1;
  }
  return -1;
}
