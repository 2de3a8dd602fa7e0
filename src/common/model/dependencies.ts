// dependsOn: what a job waits for. An entry is a job id (wait for it to succeed) or
// `{job, when: succeeded|ended|failed, tasks: same}`: `ended` waits for the other job to end
// whatever its state (a cleanup), `failed` runs only after it failed, and `tasks: same` (an array
// beside an array of the same count, Slurm's aftercorr) lets task i go once task i of the other
// job is as `when` asks. A dependency that can no longer be met cancels what waits on it.

import { isEndedState, type JobState, type TaskState } from "./states.ts";

export const DEPENDENCY_CONDITIONS = ["succeeded", "ended", "failed"] as const;
export type DependencyCondition = (typeof DEPENDENCY_CONDITIONS)[number];

/** An entry of dependsOn as the job file has it. */
export type DependencyEntry = string | { job: string; when?: DependencyCondition; tasks?: "same" };

/** An entry of dependsOn with its defaults: a bare id waits for the whole job to succeed. */
export interface Dependency {
  job: string;
  when: DependencyCondition;
  /** `tasks: same`: task i waits for task i of the other job, not for the whole job. */
  sameTasks: boolean;
}

export function dependencyOf(entry: DependencyEntry): Dependency {
  if (typeof entry === "string") return { job: entry, when: "succeeded", sameTasks: false };
  return { job: entry.job, when: entry.when ?? "succeeded", sameTasks: entry.tasks === "same" };
}

export function dependenciesOf(entries: readonly DependencyEntry[]): Dependency[] {
  return entries.map(dependencyOf);
}

/**
 * What a dependency says now: `met`, `wait` (the other job, or its task, has not ended), or `never`
 * (it ended otherwise than `when` asks, so what waits on it can never run). `state`: the other
 * job's state (its task's, for `tasks: same`); undefined when it was removed, which only an ended
 * job can be: that meets `ended` and no other condition (how it ended is no longer known).
 */
export type DependencyVerdict = "met" | "wait" | "never";

export function dependencyVerdict(
  when: DependencyCondition,
  state: TaskState | undefined,
): DependencyVerdict {
  if (state === undefined) return when === "ended" ? "met" : "never";
  if (!isEndedState(state)) return "wait";
  if (when === "ended") return "met";
  return state === when ? "met" : "never";
}

/** Several verdicts as one: never if any is, else wait if any is, else met. */
export function combinedVerdict(verdicts: Iterable<DependencyVerdict>): DependencyVerdict {
  let combined: DependencyVerdict = "met";
  for (const verdict of verdicts) {
    if (verdict === "never") return "never";
    if (verdict === "wait") combined = "wait";
  }
  return combined;
}

const VERB: Record<DependencyCondition, string> = { succeeded: "succeed", ended: "end", failed: "fail" };

/** The verb of a condition: "succeed", "end", "fail". */
export function conditionVerb(when: DependencyCondition): string {
  return VERB[when];
}

/** What a dependency waits for, in words: "job 12 to end", "task 3 of job 12 to fail". */
export function describeDependency(dependency: Dependency, task?: number): string {
  const what = task === undefined ? `job ${dependency.job}` : `task ${task} of job ${dependency.job}`;
  return `${what} to ${VERB[dependency.when]}`;
}

/**
 * The history's line for a dependency that can never be met, naming it: "cancelled: dependency 12
 * ended succeeded (this job waited for it to fail)"; for `tasks: same`, the tasks cancelled.
 */
export function unmetMessage(data: {
  dependency: string;
  when: DependencyCondition;
  state: JobState | null;
  tasks: string | null;
}): string {
  const how = data.state === null ? "was removed" : `ended ${data.state}`;
  if (data.tasks === null)
    return `cancelled: dependency ${data.dependency} ${how} (this job waited for it to ${VERB[data.when]})`;
  const one = /^\d+$/.test(data.tasks);
  const tasks = one ? `task ${data.tasks}` : `tasks ${data.tasks}`;
  return (
    `${tasks} cancelled: the same ${one ? "task" : "tasks"} of dependency ${data.dependency} ${how} ` +
    `(${one ? "it" : "they"} waited for ${one ? "it" : "them"} to ${VERB[data.when]})`
  );
}

/**
 * A `tasks: same` dependency's problem at submit, or null: both jobs must have as many tasks
 * (names both counts).
 */
export function sameTasksProblem(dependency: string, own: number, other: number): string | null {
  if (own === other) return null;
  return `tasks: same needs as many tasks as job ${dependency}: this job has ${own}, job ${dependency} has ${other}`;
}
