// dependsOn (model/dependencies.ts): which waiting tasks of a job may go, and which can never run.
// A job's waiting tasks are looked at again when a job they depend on ends, and, for `tasks: same`,
// when a task of it ends (job-state.ts says when); those whose dependencies are met become pending,
// those one of whose dependencies can no longer be met end `cancelled`, with an event naming that
// dependency. The job's state, which follows its tasks, is then refreshed by the caller.

import { formatTaskList } from "../../../common/model/task-list.ts";
import { stillWaitingAt, type UnmetDependency, waitingVerdicts } from "../../state/dependency-verdicts.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";

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
 * this (the history says so when tasks go); absent for a task's end under `tasks: same`. Answers
 * whether any waiting task went or was cancelled: then the job's state is to be refreshed.
 */
export function settleWaiting(step: Step, job: JobEntry, ended?: JobEntry): boolean {
  const waiting: number[] = [];
  for (const task of job.tasks) if (task.state === "waiting") waiting.push(task.index);
  if (waiting.length === 0) return false;
  // After one dependency's end, most often another still waits: nothing changes (a fan-in).
  if (ended) {
    const at = stillWaitingAt(step.state, job.dependencies, ended.id, job.waitHint);
    if (at >= 0) {
      job.waitHint = at;
      return false;
    }
  }
  const { release, cancel } = waitingVerdicts(step.state, job.dependencies.list, waiting);
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
  return release.length > 0 || cancel.length > 0;
}
