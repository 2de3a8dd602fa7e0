// `steward retry`: failed or cancelled tasks of a job get new attempts (model/task-retry.ts says
// which). Each starts with a fresh retry budget (its failure, loss and system-failure counts back to
// zero), the same inputs, and its checkpoint if it has one; the attempts it had stay, with their
// logs and outputs, and the next attempt's number follows theirs. A job that ended and left memory
// comes back into it from what the store holds (read before the handler runs). The job is running
// or pending again (its state follows its tasks); jobs that were cancelled because it had failed
// are not brought back (retry them too). A retry makes work queued again, so it is admitted as a
// submit is (submit.ts admitSpec: the tier allowed to who asks, the owner's queued-task limits
// with the retried tasks counted), before anything changes.

import { dependenciesOf } from "../../../common/model/dependencies.ts";
import { isEndedState } from "../../../common/model/states.ts";
import { formatTaskList } from "../../../common/model/task-list.ts";
import {
  nothingToRetry,
  type RetryRequest,
  type RetrySelection,
  retrySelection,
} from "../../../common/model/task-retry.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { StoredJob } from "../../store/store.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import type { Step } from "../step.ts";
import { checkTaskIndexes } from "./control.ts";
import { settleWaiting } from "./dependencies.ts";
import { refreshJobState } from "./job-state.ts";
import { admitSpec } from "./submit.ts";

export interface RetryJobRequest extends RetryRequest {
  id: string;
  /** Who asks (the event names them). */
  by: string;
  /** The job as the store holds it, when it had left memory (null or absent: it is in memory). */
  stored?: StoredJob | null;
  /** The workflow whose retry this is (the event names it); absent for a job's own retry. */
  workflow?: string;
  /** The QoS tiers who asks may use (a token's `--qos`); absent or null: any (an admin). */
  allowedQos?: readonly string[] | null;
  /** Admitted already (a workflow's retry admits all its jobs before any changes). */
  admitted?: boolean;
}

export interface RetryOutcome extends RetrySelection {
  job: JobEntry;
}

export function retryJob(step: Step, request: RetryJobRequest): RetryOutcome {
  const { id, by, stored } = request;
  // Checked before a job that left memory comes back: a refusal leaves it where it was.
  let job = step.state.jobs.get(id);
  const fromStore = !job && stored && stored.job.id === id && step.state.ended.has(id) ? stored : null;
  if (!job && !fromStore) throw new NotFoundError(`no job ${id}`);
  const tasksNow = job?.tasks ?? fromStore!.tasks;
  if (request.tasks) checkTaskIndexes(id, tasksNow.length, request.tasks);
  const selection = retrySelection(
    tasksNow.map((task) => task.state),
    request,
  );
  if (selection.retry.length === 0) throw new ConflictError(nothingToRetry(id, request, selection));
  const record = job?.record ?? fromStore!.job;
  if (!request.admitted)
    admitSpec(step.state, record.spec, record.owner, request.allowedQos ?? null, {
      adds: selection.retry.length,
    });
  job ??= step.write.reviveJob(fromStore!);
  const tasks = selection.retry.map((index) => job.tasks[index]);
  const waits = dependenciesOf(job.record.spec.dependsOn).length > 0;
  if (isEndedState(job.record.state) || job.record.cancelRequested)
    step.write.updateJob(job, { cancelRequested: false, endedAt: null });
  step.event(job, {
    kind: "retried",
    data: {
      by,
      tasks: formatTaskList(selection.retry),
      count: tasks.length,
      array: job.tasks.length > 1,
      ...(request.workflow ? { workflow: request.workflow } : {}),
    },
  });
  // A fresh budget, and anywhere again; the checkpoint and any memory grown after running out of it stay.
  step.write.updateTasks(job, tasks, {
    failures: 0,
    losses: 0,
    systemFailures: 0,
    notBefore: null,
    resultAttempt: null,
    migration: null,
    state: waits ? "waiting" : "pending",
  });
  // A job with dependencies takes them as they are now: met, waiting, or never (cancelled again).
  if (waits) settleWaiting(step, job);
  refreshJobState(step, job);
  step.schedule = true;
  return { job, ...selection };
}
