// The life of an attempt as the server sees it: started on its hosts, asked to stop (with the
// intent recorded, so a resent stop says the same), ended with an outcome that moves its task on.

import { taskLaunch } from "../../../common/model/array-params.ts";
import type { AttemptUsage } from "../../../common/model/attempt-usage.ts";
import { containerForAgent } from "../../../common/model/container-spec.ts";
import type { EndCause } from "../../../common/model/end-cause.ts";
import { attemptEndEvent, type TaskNext } from "../../../common/model/events.ts";
import { hostsOf } from "../../../common/model/ids.ts";
import { fetchedInputs } from "../../../common/model/input-spec.ts";
import { taskParam } from "../../../common/model/job-spec.ts";
import { pushedOutputs, storedOutputs } from "../../../common/model/output-spec.ts";
import type { AttemptRecord, StopIntent } from "../../../common/model/records.ts";
import { taskAfterReplicaEnd } from "../../../common/model/replicas.ts";
import { type AttemptOutcome, isEndedState } from "../../../common/model/states.ts";
import { renderStopReason, type StopReason } from "../../../common/model/stop-reasons.ts";
import {
  grownMemoryMb,
  type TaskAfterAttempt,
  taskAfterAttempt,
  taskAfterSystemFailure,
} from "../../../common/model/task-outcome.ts";
import type { ServerMessage, StartMessage } from "../../../common/protocol/messages.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { refreshJobState } from "./job-state.ts";

/** The start of an attempt (of its rank `rank`, for a gang): its command, its size, its devices. */
export function startMessage(job: JobEntry, attempt: AttemptRecord, rank = 0): StartMessage {
  const spec = job.record.spec;
  const memoryMb = attempt.memoryMb ?? spec.resources.memoryMb;
  const gpus = attempt.placement.find((entry) => entry.rank === rank)?.gpus;
  const custom = spec.resources.custom;
  const urlInputs = fetchedInputs(spec.inputs);
  // An array's parameter is put in here, so that the agent runs what it is sent (array-params.ts).
  const param = taskParam(spec, attempt.taskIndex);
  const urlOutputs = pushedOutputs(spec.outputs, param);
  const { command, env } =
    param === undefined
      ? { command: spec.command, env: spec.env }
      : taskLaunch(spec.command, spec.env, param);
  return {
    type: "start",
    jobId: job.id,
    taskIndex: attempt.taskIndex,
    attempt: attempt.number,
    owner: job.record.owner,
    restarted: attempt.restarted,
    command,
    env,
    inputs: job.record.inputs,
    ...(job.record.inputDigests ? { inputDigests: job.record.inputDigests } : {}),
    ...(urlInputs.length > 0 ? { urlInputs } : {}),
    outputs: storedOutputs(spec.outputs),
    ...(urlOutputs.length > 0 ? { urlOutputs } : {}),
    cpus: spec.resources.cpus,
    ...(memoryMb > 0 ? { memoryMb } : {}),
    ...(spec.resources.maxProcesses !== undefined ? { maxProcesses: spec.resources.maxProcesses } : {}),
    ...(gpus && gpus.length > 0 ? { gpus } : {}),
    ...(custom && Object.keys(custom).length > 0 ? { resources: custom } : {}),
    timeLimitSeconds: spec.timeLimitSeconds ?? null,
    ...(spec.workdir !== undefined ? { workdir: spec.workdir } : {}),
    ...(spec.container ? { container: containerForAgent(spec.container) } : {}),
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
    reason: renderStopReason(intent.reason),
    graceSeconds: job.record.spec.checkpoint.graceSeconds,
  };
}

/** Asks a live attempt to stop; the intent is committed with it, and sent once committed. */
export function stopAttempt(step: Step, job: JobEntry, attempt: AttemptRecord, intent: StopIntent): void {
  if (attempt.state === "ended" || attempt.state === "stopping") return;
  step.write.attemptStopping(attempt, intent);
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
  if (job.record.cancelRequested) return { outcome: "cancelled", reason: { kind: "user-cancel" } };
  if (job.record.held) return { outcome: "preempted", reason: { kind: "held" } };
  return { outcome: "migrated", reason: { kind: "migrate-requested", to: null } };
}

export interface AttemptEnd {
  outcome: AttemptOutcome;
  exitCode: number | null;
  /** Rendered where it is stored and recorded in the end's event (renderStopReason). */
  reason: StopReason | null;
  /** For `lost`: whose failure it was (default: the host's); `oom` for a failure by the memory limit. */
  cause?: EndCause;
  /** What it used, as its agent measured it (absent when no agent said: a lost host, an old agent). */
  usage?: AttemptUsage | null;
}

/** Ends a live attempt and moves its task on (retry, restart, result, failure). */
export function endAttempt(step: Step, job: JobEntry, attempt: AttemptRecord, reported: AttemptEnd): void {
  const { now } = step;
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
  // The one place the end's reason becomes the text the attempt keeps and its event tells.
  const reason = end.reason === null ? null : renderStopReason(end.reason);
  step.write.endAttempt(job, attempt, { ...end, reason });
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
        reason,
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
    const after = taskAfterReplicaEnd(task, { ...end, reason }, job.record.spec.retry, others.length);
    if (
      after.failures !== task.failures ||
      after.losses !== task.losses ||
      after.systemFailures !== task.systemFailures
    ) {
      step.write.updateTask(job, task, {
        failures: after.failures,
        losses: after.losses,
        systemFailures: after.systemFailures,
      });
    }
    record(after.next);
    refreshJobState(step, job);
    return;
  }
  job.clearProgress(attempt.taskIndex);
  const systemFailure = end.outcome === "lost" && end.cause !== undefined && end.cause !== "host";
  const attemptEnd = { number: attempt.number, outcome: end.outcome, reason };
  let next: TaskAfterAttempt;
  let systemFailures = task.systemFailures;
  if (systemFailure) {
    const after = taskAfterSystemFailure(task, job.record.spec.retry, now, step.random());
    systemFailures = after.systemFailures;
    next = after;
  } else {
    next = taskAfterAttempt(task, attemptEnd, job.record.spec.retry, now, step.random());
  }
  // Killed for its memory limit: the task's next attempts may take more (retry.memoryGrowth).
  let memoryMb = task.memoryMb;
  if (end.cause === "oom" && next.state === "pending" && next.next.is === "retry") {
    const grown = grownMemoryMb(attempt.memoryMb ?? job.memoryMb, job.record.spec.retry);
    if (grown !== null) {
      memoryMb = grown;
      next = { ...next, next: { ...next.next, memoryMb: grown } };
    }
  }
  // A task of a job being cancelled, or a task a user cancelled, does not go round again.
  const cancelled =
    job.record.cancelRequested ||
    (attempt.stop?.outcome === "cancelled" && attempt.stop.reason.kind === "user-cancel");
  const taskState = cancelled && next.state === "pending" ? "cancelled" : next.state;
  step.write.updateTask(job, task, {
    systemFailures,
    failures: next.failures,
    losses: next.losses,
    notBefore: next.notBefore,
    resultAttempt: next.resultAttempt,
    memoryMb,
    state: taskState,
  });
  if (end.outcome !== "succeeded" || single) record(next.next);
  // The first replica to succeed wins; the others are stopped.
  if (end.outcome === "succeeded") {
    for (const other of others) {
      stopAttempt(step, job, other, { outcome: "cancelled", reason: { kind: "replica-lost" } });
    }
  }
  refreshJobState(step, job);
}
