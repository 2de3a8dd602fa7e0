// An array's throttle (`array: {parallel: M}`): at most M of its tasks hold slots at once, counting
// those with a live attempt (starting, running or stopping: JobView.liveTasks, kept by the job, not
// counted by walking its tasks) and those placed earlier in the same pass. A pass skips the job's
// further tasks once M are reached; the plan applier checks the same rule again (throttleAllows).

import type { JobView } from "../view.ts";

type Throttled = Pick<JobView, "parallel" | "liveTasks">;

/** Whether one more of the job's tasks may start, with `placed` of them placed already in this pass. */
export function throttleAllows(job: Throttled, placed = 0): boolean {
  return job.parallel === undefined || (job.liveTasks ?? 0) + placed < job.parallel;
}

/** How many more of the job's tasks may start now (Infinity without a throttle). */
export function throttleRoom(job: Throttled): number {
  return job.parallel === undefined
    ? Number.POSITIVE_INFINITY
    : Math.max(0, job.parallel - (job.liveTasks ?? 0));
}

/** Why the job may start no more tasks now (explain's words), or null when it may. */
export function throttleReason(job: Throttled, placed = 0): string | null {
  if (throttleAllows(job, placed)) return null;
  const running = job.liveTasks ?? 0;
  const held =
    placed === 0
      ? `${running} of its tasks run`
      : `${running} of its tasks run and ${placed} start in this pass`;
  return `${held}, the most its array allows at once (parallel: ${job.parallel})`;
}

/** The tasks each throttled job has had placed in one pass (jobs without a throttle are not counted). */
export class ArrayThrottle {
  readonly #placed = new Map<string, number>();

  /** Why the job may have no more tasks placed in this pass, or null. */
  reason(job: Throttled & Pick<JobView, "id">): string | null {
    if (job.parallel === undefined) return null;
    return throttleReason(job, this.#placed.get(job.id) ?? 0);
  }

  /** One of the job's tasks was placed. */
  placed(job: Pick<JobView, "id" | "parallel">): void {
    if (job.parallel !== undefined) this.#placed.set(job.id, (this.#placed.get(job.id) ?? 0) + 1);
  }
}
