// The JSON shapes of jobs, tasks, attempts and hosts, from the records: what `--json` prints and the API
// answers. Each view's type is the one its schema in src/common/api/ gives, so the two cannot drift.

import type { AccountingRow } from "../../common/api/accounting.ts";
import type { Event } from "../../common/api/events.ts";
import type { Host } from "../../common/api/hosts.ts";
import type { Attempt, Job, JobSummary, Task, Usage } from "../../common/api/jobs.ts";
import { type AttemptUsage, exitSignal } from "../../common/model/attempt-usage.ts";
import type {
  AccountingRecord,
  AttemptRecord,
  EventRecord,
  HostListing,
  JobHead,
  JobHeader,
  TaskRecord,
} from "../../common/model/records.ts";
import type { JobRead, TaskRead } from "../reactor/ports.ts";

export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export function attemptView(attempt: AttemptRecord): Attempt {
  return {
    number: attempt.number,
    host: attempt.host,
    state: attempt.state,
    outcome: attempt.outcome,
    reason: attempt.reason,
    exitCode: attempt.exitCode,
    restarted: attempt.restarted,
    startedAt: iso(attempt.startedAt),
    endedAt: iso(attempt.endedAt),
    usage: usageView(attempt.usage, attempt.exitCode),
    placement: attempt.placement.length > 0 ? attempt.placement : [{ host: attempt.host, rank: 0 }],
    memoryMb: attempt.memoryMb ?? null,
  };
}

/** An attempt's usage as the API shows it: with the signal that ended its job, if one did. */
function usageView(usage: AttemptUsage | null, exitCode: number | null): Usage | null {
  if (usage === null) return null;
  const { userSeconds, systemSeconds, peakMemoryMb, wallSeconds } = usage;
  return { userSeconds, systemSeconds, peakMemoryMb, wallSeconds, signal: exitSignal(exitCode) };
}

export function accountingRowView(row: AccountingRecord): AccountingRow {
  return {
    job: row.jobId,
    name: row.jobName,
    owner: row.owner,
    task: row.taskIndex,
    attempt: row.number,
    host: row.host,
    outcome: row.outcome,
    exitCode: row.exitCode,
    signal: exitSignal(row.exitCode),
    startedAt: iso(row.startedAt),
    endedAt: iso(row.endedAt),
    usage: usageView(row.usage, row.exitCode),
  };
}

export function taskView(job: JobRead, task: TaskRecord): Task {
  return taskReadView({
    task,
    attempts: job.attempts.get(task.index) ?? [],
    progress: job.progress.get(task.index),
  });
}

/** A task as the API shows it, from its record, its attempts and its last progress. */
export function taskReadView({ task, attempts, progress: last }: TaskRead): Task {
  const progress = task.state === "running" ? last : undefined;
  return {
    index: task.index,
    state: task.state,
    progress: progress ? { fraction: progress.fraction, at: iso(progress.at) } : null,
    attempts: attempts.map(attemptView),
    checkpoint: task.checkpoint
      ? { generation: task.checkpoint.generation, bytes: task.checkpoint.bytes, at: iso(task.checkpoint.at) }
      : null,
  };
}

export function jobSummaryView(job: JobHeader): JobSummary {
  return {
    id: job.id,
    name: job.name,
    owner: job.owner,
    state: job.state,
    priority: job.priority,
    qos: job.qos,
    createdAt: iso(job.createdAt),
    endedAt: iso(job.endedAt),
    taskCount: job.taskCount,
    counts: { ...job.counts },
  };
}

export function jobView(job: JobRead, events: EventRecord[] | null, withTasks = true): Job {
  return {
    ...jobHeadView(job, events),
    ...(withTasks ? { tasks: job.tasks.map((task) => taskView(job, task)) } : {}),
  };
}

/** A job without its tasks: its summary, job file and workflow (and its events when given). */
export function jobHeadView({ header, record }: JobHead, events: EventRecord[] | null): Job {
  return {
    ...jobSummaryView(header),
    spec: record.spec,
    workflow: record.workflow ?? null,
    ...(events ? { events: events.map(eventView) } : {}),
  };
}

export function eventView(event: EventRecord): Event {
  return { id: event.id, at: iso(event.at), kind: event.kind, data: event.data, message: event.message };
}

export function hostView(host: HostListing): Host {
  return {
    name: host.name,
    pool: host.pool,
    state: host.state,
    connected: host.connected,
    slots: host.slots,
    slotsFree: host.slotsFree,
    liveAttempts: host.liveAttempts,
    labels: host.labels,
    facts: host.facts,
    lastSeen: iso(host.lastSeen),
    endsAt: host.endsAt === null ? null : iso(host.endsAt),
  };
}
