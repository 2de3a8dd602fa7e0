// dependsOn: a job that ended lets the jobs waiting on it go (when it succeeded and they have
// nothing else to wait for), or fails their waiting tasks (when it did not succeed).

import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { refreshJobState } from "./job-state.ts";

export function releaseDependents(step: Step, ended: JobEntry): void {
  const { state } = step;
  for (const job of state.jobs.values()) {
    if (job.record.state !== "waiting" || !job.record.spec.dependsOn.includes(ended.id)) continue;
    const succeeded = ended.record.state === "succeeded";
    if (succeeded && !state.dependenciesMet(job.record.spec.dependsOn)) continue;
    const dirty = job.tasks.filter((task) => task.state === "waiting");
    step.event(job, { kind: "dependencies", data: { dependency: ended.id, state: ended.record.state } });
    step.write.updateTasks(job, dirty, { state: succeeded ? "pending" : "failed" });
    refreshJobState(step, job);
  }
  step.schedule = true;
}
