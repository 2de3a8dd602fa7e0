// The life of an attempt as the server sees it: started on its hosts, asked to stop (with the
// intent recorded, so a resent stop says the same), ended with an outcome that moves its task on.

import type { AttemptUsage } from "../../model/attempt-usage.ts";
import { attemptEndEvent, type TaskNext } from "../../model/events.ts";
import { hostsOf } from "../../model/ids.ts";
import type { AttemptRecord, StopIntent } from "../../model/records.ts";
import { taskAfterReplicaEnd } from "../../model/replicas.ts";
import { type AttemptOutcome, isEndedState } from "../../model/states.ts";
import {
  type LossCause,
  type TaskAfterAttempt,
  taskAfterAttempt,
  taskAfterSystemFailure,
} from "../../model/task-outcome.ts";
import type { ServerMessage, StartMessage } from "../../protocol/messages.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { refreshJobState } from "./job-state.ts";

/** The reason a winning replica gives the others it stops. */
export const REPLICA_LOST_REASON = "replica lost the race";

export function startMessage(job: JobEntry, attempt: AttemptRecord): StartMessage {
  const spec = job.record.spec;
  return {
    type: "start",
    jobId: job.id,
    taskIndex: attempt.taskIndex,
    attempt: attempt.number,
    owner: job.record.owner,
    restarted: attempt.restarted,
    command: spec.command,
    env: spec.env,
    inputs: job.record.inputs,
    outputs: spec.outputs,
    cpus: spec.resources.cpus,
    ...(spec.resources.memoryMb > 0 ? { memoryMb: spec.resources.memoryMb } : {}),
    timeLimitSeconds: spec.timeLimitSeconds ?? null,
    graceSeconds: spec.checkpoint.graceSeconds,
    checkpointIntervalSeconds: spec.checkpoint.intervalSeconds,
  };
}

function stopMessage(job: JobEntry, attempt: AttemptRecord, intent: StopIntent): ServerMessage {
  return {
    type: "stop",
    jobId: job.id,
    taskIndex: attempt.taskIndex,
    attempt: attempt.number,
    outcome: intent.outcome,
    reason: intent.reason,
    graceSeconds: job.record.spec.checkpoint.graceSeconds,
  };
}

/** Asks a live attempt to stop; the intent is committed with it, and sent once committed. */
export function stopAttempt(step: Step, job: JobEntry, attempt: AttemptRecord, intent: StopIntent): void {
  if (attempt.state === "ended" || attempt.state === "stopping") return;
  attempt.state = "stopping";
  attempt.stop = intent;
  step.change({ op: "putAttempt", attempt });
  sendStop(step, job, attempt);
}

/** (Re)sends the recorded stop of a stopping attempt, to every host it runs on. */
export function sendStop(step: Step, job: JobEntry, attempt: AttemptRecord): void {
  const intent = attempt.stop ?? legacyStopIntent(job);
  for (const host of hostsOf(attempt)) {
    step.effect({ kind: "send", host, message: stopMessage(job, attempt, intent) });
  }
}

/** Attempts stopped before intents were recorded: the intent follows from the job's flags. */
function legacyStopIntent(job: JobEntry): StopIntent {
  if (job.record.cancelRequested) return { outcome: "cancelled", reason: "cancelled by user" };
  if (job.record.held) return { outcome: "preempted", reason: "held" };
  return { outcome: "migrated", reason: "migrating to another host" };
}

export interface AttemptEnd {
  outcome: AttemptOutcome;
  exitCode: number | null;
  reason: string | null;
  /** For `lost`: whose failure it was (default: the host's). */
  cause?: LossCause;
  /** What it used, as its agent measured it (absent when no agent said: a lost host, an old agent). */
  usage?: AttemptUsage | null;
}

/** Ends a live attempt and moves its task on (retry, restart, result, failure). */
export function endAttempt(step: Step, job: JobEntry, attempt: AttemptRecord, reported: AttemptEnd): void {
  const { state, now } = step;
  const task = job.tasks[attempt.taskIndex];
  // A replica stopped because another gave the task its result ends as it was told (cancelled,
  // replica lost the race), whatever it reports: finishing a moment later does not make it a result.
  const lostRace = isEndedState(task.state) && attempt.stop !== null;
  const end: AttemptEnd = lostRace
    ? {
        outcome: attempt.stop!.outcome,
        exitCode: reported.exitCode,
        reason: attempt.stop!.reason,
        usage: reported.usage,
      }
    : reported;
  attempt.state = "ended";
  attempt.outcome = end.outcome;
  attempt.exitCode = end.exitCode;
  attempt.reason = end.reason;
  attempt.endedAt = now;
  attempt.usage = end.usage ?? null;
  job.attemptEnded(attempt);
  state.deactivate(attempt);
  step.change({ op: "putAttempt", attempt });
  step.schedule = true;
  const others = job.liveAttempts(task.index);
  const single = job.tasks.length === 1;
  const record = (next: TaskNext) =>
    step.event(
      job,
      attemptEndEvent({
        task: task.index,
        attempt: attempt.number,
        host: attempt.host,
        outcome: end.outcome,
        exitCode: end.exitCode,
        reason: end.reason,
        ...(end.cause ? { cause: end.cause } : {}),
        array: !single,
        next,
      }),
    );
  // A task that has its result is not moved by this end.
  if (isEndedState(task.state)) {
    if (lostRace) record({ is: "lostRace" });
    refreshJobState(step, job);
    return;
  }
  // A replica that ends short of success while others still run leaves the task running; it is
  // counted against the task's budget (model/replicas.ts), and the task moves when its last ends.
  if (end.outcome !== "succeeded" && others.length > 0) {
    const after = taskAfterReplicaEnd(task, end, job.record.spec.retry, others.length);
    if (
      after.failures !== task.failures ||
      after.losses !== task.losses ||
      after.systemFailures !== task.systemFailures
    ) {
      task.failures = after.failures;
      task.losses = after.losses;
      task.systemFailures = after.systemFailures;
      step.change({ op: "putTasks", tasks: [task] });
    }
    record(after.next);
    refreshJobState(step, job);
    return;
  }
  job.clearProgress(attempt.taskIndex);
  const systemFailure = end.outcome === "lost" && end.cause !== undefined && end.cause !== "host";
  const attemptEnd = { number: attempt.number, outcome: end.outcome, reason: end.reason };
  let next: TaskAfterAttempt;
  if (systemFailure) {
    const after = taskAfterSystemFailure(task, job.record.spec.retry, now, step.random());
    task.systemFailures = after.systemFailures;
    next = after;
  } else {
    next = taskAfterAttempt(task, attemptEnd, job.record.spec.retry, now, step.random());
  }
  // A task of a job being cancelled does not go round again.
  const taskState = job.record.cancelRequested && next.state === "pending" ? "cancelled" : next.state;
  task.failures = next.failures;
  task.losses = next.losses;
  task.notBefore = next.notBefore;
  task.resultAttempt = next.resultAttempt;
  state.setTaskState(job, task, taskState);
  step.change({ op: "putTasks", tasks: [task] });
  if (end.outcome !== "succeeded" || single) record(next.next);
  // The first replica to succeed wins; the others are stopped.
  if (end.outcome === "succeeded") {
    for (const other of others) {
      stopAttempt(step, job, other, { outcome: "cancelled", reason: REPLICA_LOST_REASON });
    }
  }
  refreshJobState(step, job);
}
