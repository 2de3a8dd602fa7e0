// How a job that has ended ended (what explain says of it instead of hosts): its state, how many of
// its tasks ended each way, and, from its events since its last retry, why it was cancelled: a
// dependency that can no longer be met (which one, and how it ended) or a user's cancel. Pure: the
// job's counts and events in.

import { conditionVerb, type DependencyCondition } from "../../common/model/dependencies.ts";
import type { TaskCounts } from "../../common/model/job-state.ts";
import type { EventRecord } from "../../common/model/records.ts";
import type { JobState } from "../../common/model/states.ts";

export interface EndedJob {
  state: JobState;
  taskCount: number;
  counts: Pick<TaskCounts, "succeeded" | "failed" | "cancelled">;
}

/** What explain says of an ended job, one line each: its end, then why (oldest event first). */
export function endedJobReasons(job: EndedJob, events: readonly EventRecord[]): string[] {
  const reasons = [`the job has ended: ${job.state}${taskTally(job)}`];
  // What an earlier run of it did (before a retry) does not explain this end.
  let since = 0;
  events.forEach((event, index) => {
    if (event.kind === "retried") since = index + 1;
  });
  for (const event of events.slice(since)) {
    const line = causeOf(event, job.state);
    if (line !== null && !reasons.includes(line)) reasons.push(line);
  }
  return reasons;
}

/** ` (5 tasks: 3 succeeded, 2 failed)` for an array; nothing for one task. */
function taskTally({ taskCount, counts }: EndedJob): string {
  if (taskCount <= 1) return "";
  const parts = (["succeeded", "failed", "cancelled"] as const)
    .filter((each) => counts[each] > 0)
    .map((each) => `${counts[each]} ${each}`);
  return ` (${taskCount} tasks: ${parts.join(", ")})`;
}

/** The line an event gives of why the job ended as it did, or null. */
function causeOf(event: EventRecord, ended: JobState): string | null {
  const data = event.data;
  if (event.kind === "dependency.unmet") {
    const dependency = String(data.dependency);
    const state = data.state === null || data.state === undefined ? null : String(data.state);
    const when = String(data.when) as DependencyCondition;
    const tasks = typeof data.tasks === "string" ? `tasks ${data.tasks} ` : "";
    const how = state === null ? `job ${dependency} was removed` : `job ${dependency} ended ${state}`;
    return `${tasks}cancelled because its dependency can never be met: ${how} (it waited for it to ${conditionVerb(when)})`;
  }
  // Before `dependency.unmet`, a dependency that did not succeed was told by this event (a
  // cancelled job's cause; it also released jobs that waited for any end).
  if (event.kind === "dependencies" && data.state !== "succeeded" && ended === "cancelled")
    return `cancelled because its dependency can never be met: job ${String(data.dependency)} ended ${String(data.state)}`;
  if (event.kind === "cancel") return event.message;
  return null;
}
