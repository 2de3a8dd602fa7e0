// Jobs a step ended (or whose last attempt it ended) leave memory, their headers staying: only once
// the step's changes are durable, so a reader sent to the store finds the job ended there.

import type { ClusterState } from "../state/cluster-state.ts";
import { mayRetire } from "../state/job-header.ts";
import type { Change } from "../store/store.ts";

export function retireEnded(state: ClusterState, changes: readonly Change[]): void {
  let seen: Set<string> | null = null;
  for (const change of changes) {
    const id =
      change.op === "putJob" ? change.job.id : change.op === "putAttempt" ? change.attempt.jobId : null;
    if (id === null || seen?.has(id)) continue;
    seen ??= new Set();
    seen.add(id);
    const job = state.jobs.get(id);
    if (job && mayRetire(job)) state.retire(job);
  }
}
