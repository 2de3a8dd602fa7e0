// What users ask of jobs and hosts: cancel, hold, release, migrate, drain, remove. Stops go
// through the one plan applier (apply-plan.ts), as the scheduler's do.

import type { HostRecord, StopIntent, TaskRecord } from "../../../common/model/records.ts";
import { isEndedState } from "../../../common/model/states.ts";
import { formatTaskList } from "../../../common/model/task-list.ts";
import { migrationRefusal, migrationTargets } from "../../scheduler/migration-rule.ts";
import type { StopEntry } from "../../scheduler/view.ts";
import { hostRecordNow } from "../../state/host-entry.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import { ConflictError, InvalidRequestError, NotFoundError } from "../errors.ts";
import type { Step } from "../step.ts";
import { applyStops } from "./apply-plan.ts";
import { endOnHost } from "./gangs.ts";
import { refreshJobState } from "./job-state.ts";

export function findJob(step: Step, id: string): JobEntry {
  const job = step.state.jobs.get(id);
  if (!job) throw new NotFoundError(`no job ${id}`);
  return job;
}

/** The stop a user's cancel asks for (`steward cancel`, of the job or of some of its tasks). */
const USER_CANCEL: StopIntent = { outcome: "cancelled", reason: { kind: "user-cancel" } };

function stopsOf(job: JobEntry, intent: StopIntent, skip?: (host: string) => boolean): StopEntry[] {
  const stops: StopEntry[] = [];
  for (const attempt of job.allLiveAttempts()) {
    if (attempt.state !== "starting" && attempt.state !== "running") continue;
    if (skip?.(attempt.host)) continue;
    stops.push({ jobId: job.id, taskIndex: attempt.taskIndex, attempt: attempt.number, intent });
  }
  return stops;
}

/**
 * A task no attempt of which runs now: pending, or waiting for its dependencies. (A task is never
 * `held`: a hold is its job's flag, JobRecord.held, and a held job's tasks stay pending.)
 */
const hasNotStarted = (task: TaskRecord): boolean => task.state === "pending" || task.state === "waiting";

export function cancelJob(step: Step, id: string, by = "user"): JobEntry {
  const job = findJob(step, id);
  if (job.isEnded()) return job;
  const dirty = job.tasks.filter(hasNotStarted);
  if (dirty.length) step.write.updateTasks(job, dirty, { state: "cancelled" });
  step.write.updateJob(job, { cancelRequested: true });
  step.event(job, { kind: "cancel", data: { by } });
  applyStops(step, stopsOf(job, USER_CANCEL));
  refreshJobState(step, job);
  return job;
}

/** The tasks of a job a request names, each checked to be one of its tasks (400 otherwise). */
export function namedTasks(job: JobEntry, indexes: readonly number[]): TaskRecord[] {
  checkTaskIndexes(job.id, job.tasks.length, indexes);
  return indexes.map((index) => job.tasks[index]);
}

/** Refuses (400, field `tasks`) indexes past a job's tasks, naming them and what the job has. */
export function checkTaskIndexes(id: string, count: number, indexes: readonly number[]): void {
  const outside = indexes.filter((index) => index >= count);
  if (outside.length === 0) return;
  const has = count === 1 ? "one task (0)" : `${count} tasks (0-${count - 1})`;
  throw new InvalidRequestError("tasks", `job ${id} has ${has}: no task ${formatTaskList(outside)}`);
}

/**
 * Cancels some tasks of a job (`steward cancel ID --tasks LIST`): those not started end cancelled,
 * running ones are stopped as a cancel of the job stops them (their attempts end `cancelled`, and
 * the task does not go round again); tasks that have ended are left as they are. The job ends once
 * all its tasks have (model/job-state.ts: cancelled tasks beside succeeded ones read `cancelled`).
 */
export function cancelTasks(step: Step, id: string, indexes: readonly number[], by = "user"): JobEntry {
  const job = findJob(step, id);
  const named = namedTasks(job, indexes);
  const open = named.filter((task) => !isEndedState(task.state));
  if (open.length === 0) return job;
  const notStarted = open.filter(hasNotStarted);
  if (notStarted.length) step.write.updateTasks(job, notStarted, { state: "cancelled" });
  step.event(job, { kind: "cancel", data: { by, tasks: formatTaskList(open.map((task) => task.index)) } });
  const chosen = new Set(open.map((task) => task.index));
  applyStops(
    step,
    stopsOf(job, USER_CANCEL).filter((stop) => chosen.has(stop.taskIndex)),
  );
  refreshJobState(step, job);
  return job;
}

/** Holds a job: pending tasks do not start; running attempts stop (ended `preempted`, reason `held`); `reason` goes in its event. */
export function holdJob(step: Step, id: string, by = "user", reason?: string): JobEntry {
  const job = findJob(step, id);
  if (job.isEnded()) throw new ConflictError(`job ${id} is ${job.record.state}`);
  if (job.record.held) return job;
  step.write.updateJob(job, { held: true });
  step.event(job, { kind: "hold", data: reason ? { by, reason } : { by } });
  applyStops(step, stopsOf(job, { outcome: "preempted", reason: { kind: "held" } }));
  refreshJobState(step, job);
  return job;
}

export function releaseJob(step: Step, id: string, by = "user"): JobEntry {
  const job = findJob(step, id);
  if (!job.record.held) return job;
  step.write.updateJob(job, { held: false });
  step.event(job, { kind: "release", data: { by } });
  refreshJobState(step, job);
  step.state.queue.add(job);
  step.schedule = true;
  return job;
}

/**
 * Stops the job's running attempts with a checkpoint; their tasks restart on another host (or on
 * `to`). The target is recorded on the task with the stop, so a server restart keeps it. A
 * migration to no named host is refused (409) when no other host matches the job and has room
 * for it now (scheduler/migration-rule.ts): it would only come back to the same host.
 */
export function migrateJob(step: Step, id: string, to: string | null, by = "user"): JobEntry {
  const job = findJob(step, id);
  if (to !== null) {
    const host = step.state.hosts.get(to);
    if (!host) throw new NotFoundError(`no host ${to}`);
    if (host.record.state !== "ready" || !host.connected) {
      throw new ConflictError(`host ${to} is ${host.connected ? host.record.state : "not connected"}`);
    }
  }
  const intent: StopIntent = { outcome: "migrated", reason: { kind: "migrate-requested", to } };
  const stops = stopsOf(job, intent, (host) => host === to).map((stop) => ({ ...stop, migrateTo: { to } }));
  if (stops.length === 0) {
    const here = to !== null && stopsOf(job, intent).length > 0;
    throw new ConflictError(
      here
        ? `job ${id} runs on ${to} already: nothing to migrate`
        : `job ${id} has no running attempt to migrate`,
    );
  }
  if (to === null) refuseMigrationWithNowhereToGo(step, job);
  applyStops(step, stops);
  step.event(job, { kind: "migrate", data: { to, by } });
  return job;
}

/** Refuses (409) a migration away from a host when no other host matches the job and has room now. */
function refuseMigrationWithNowhereToGo(step: Step, job: JobEntry): void {
  const hosts = step.state.hostViews(step.now);
  const from = new Set<string>();
  for (const attempt of job.allLiveAttempts())
    if (attempt.state === "starting" || attempt.state === "running") from.add(attempt.host);
  for (const host of from) {
    const refusal = migrationRefusal(migrationTargets(job, hosts, host), host);
    if (refusal)
      throw new ConflictError(
        `job ${job.id}: not migrated: ${refusal}; use hold and release to restart it on ${host}`,
      );
  }
}

export function drainHost(step: Step, name: string): HostRecord {
  const host = step.state.hosts.get(name);
  if (!host) throw new NotFoundError(`no host ${name}`);
  if (host.record.state === "ready") step.write.setHostState(host, "draining");
  return hostRecordNow(host);
}

/** A draining host takes work again; a ready one is answered as it is; a lost one cannot be. */
export function undrainHost(step: Step, name: string): HostRecord {
  const host = step.state.hosts.get(name);
  if (!host) throw new NotFoundError(`no host ${name}`);
  if (host.record.state === "lost")
    throw new ConflictError(
      `host ${name} is lost: it takes work again when its agent comes back (or remove it: steward hosts rm ${name})`,
    );
  if (host.record.state === "draining") {
    step.write.setHostState(host, "ready");
    step.schedule = true;
  }
  return hostRecordNow(host);
}

/**
 * Forgets a host whose agent is not attached (lost, or disconnected): its attempts still counted
 * live end as lost (their tasks are placed elsewhere), and its host credentials are revoked, so
 * its agent must join again with a join token. Answers the ids of the credentials revoked.
 */
export function removeHost(step: Step, name: string, by = "user"): string[] {
  const host = step.state.hosts.get(name);
  if (!host) throw new NotFoundError(`no host ${name}`);
  if (host.connected) throw new ConflictError(`host ${name} is connected: drain it and stop its agent first`);
  for (const live of [...host.active.values()])
    endOnHost(step, live, name, {
      outcome: "lost",
      exitCode: null,
      reason: { kind: "host-removed", host: name, by },
      cause: "host",
    });
  step.write.removeHost(name);
  const revoked: string[] = [];
  for (const credential of step.state.tokens.credentialsOf(name))
    if (credential.revokedAt === null) {
      step.write.revokeToken(credential);
      revoked.push(credential.id);
    }
  step.schedule = true;
  return revoked;
}

/** Removes a host that is gone for good (a pilot that left), if disconnected and running nothing. */
export function forgetHost(step: Step, name: string): void {
  const host = step.state.hosts.get(name);
  if (!host || host.connected || host.active.size > 0) return;
  step.write.removeHost(name);
  // Its name may be taken again by a new agent with a join token.
  const credential = step.state.tokens.credentialOf(name, step.now);
  if (credential) step.write.revokeToken(credential);
}

export function removeJob(step: Step, id: string): void {
  // An ended job that has left memory: its header goes, the store removes the rest.
  if (!step.state.jobs.has(id) && step.state.ended.has(id)) {
    step.write.removeJob(id);
    return;
  }
  const job = findJob(step, id);
  if (!job.isEnded()) throw new ConflictError(`job ${id} is ${job.record.state}: cancel it first`);
  step.write.removeJob(id);
}
