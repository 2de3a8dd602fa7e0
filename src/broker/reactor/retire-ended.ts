// Jobs a step ended (or whose last attempt it ended) leave memory, their headers staying: only once
// the step's changes are durable, so a reader sent to the store finds the job ended there. A job a
// later step changed too (its commit still on its way) stays until that commit is durable as well:
// the reactor counts each job's commits in flight (CommitsInFlight) and asks only for those done.

import type { ClusterState } from "../state/cluster-state.ts";
import { mayRetire } from "../state/job-header.ts";
import type { Change } from "../store/store.ts";

/** The jobs a step's changes name (their jobs, tasks or attempts). */
export function jobsChanged(changes: readonly Change[]): Set<string> {
  const ids = new Set<string>();
  for (const change of changes) {
    if (change.op === "putJob") ids.add(change.job.id);
    else if (change.op === "putAttempt") ids.add(change.attempt.jobId);
    else if (change.op === "putTasks") for (const task of change.tasks) ids.add(task.jobId);
    else if (change.op === "putNewTasks") ids.add(change.jobId);
  }
  return ids;
}

/** How many handled steps that change each job have not been committed yet. */
export class CommitsInFlight {
  readonly #count = new Map<string, number>();

  /** A step naming these jobs was handled: its commit is on its way. */
  started(ids: Iterable<string>): void {
    for (const id of ids) this.#count.set(id, (this.#count.get(id) ?? 0) + 1);
  }

  /** That step's commit is done (durable, or failed): the jobs no other commit in flight names. */
  done(ids: Iterable<string>): string[] {
    const settled: string[] = [];
    for (const id of ids) {
      const left = (this.#count.get(id) ?? 1) - 1;
      if (left > 0) this.#count.set(id, left);
      else {
        this.#count.delete(id);
        settled.push(id);
      }
    }
    return settled;
  }
}

/** Retires the jobs of `ids` that may leave memory (mayRetire). */
export function retireJobs(state: ClusterState, ids: Iterable<string>): void {
  for (const id of ids) {
    const job = state.jobs.get(id);
    if (job && mayRetire(job)) state.retire(job);
  }
}
