// The JSON shapes of DESIGN.md ("JSON shapes"): what `--json` prints and the API answers.

import type { AttemptRecord, EventRecord, HostRecord, TaskRecord } from "../model/records.ts";
import type { JobEntry } from "./job-entry.ts";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function attemptView(attempt: AttemptRecord) {
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
  };
}

export function taskView(job: JobEntry, task: TaskRecord) {
  const progress = task.state === "running" ? job.progress.get(task.index) : undefined;
  return {
    index: task.index,
    state: task.state,
    progress: progress ? { fraction: progress.fraction, at: iso(progress.at) } : null,
    attempts: (job.attempts.get(task.index) ?? []).map(attemptView),
    checkpoint: task.checkpoint
      ? { generation: task.checkpoint.generation, bytes: task.checkpoint.bytes, at: iso(task.checkpoint.at) }
      : null,
  };
}

export function jobSummaryView(job: JobEntry) {
  const { record } = job;
  return {
    id: record.id,
    name: record.name,
    owner: record.owner,
    state: record.state,
    priority: record.priority,
    createdAt: iso(record.createdAt),
    endedAt: iso(record.endedAt),
    taskCount: job.tasks.length,
    counts: { ...job.counts },
  };
}

export function jobView(job: JobEntry, events: EventRecord[] | null, withTasks = true) {
  return {
    ...jobSummaryView(job),
    spec: job.record.spec,
    ...(withTasks ? { tasks: job.tasks.map((task) => taskView(job, task)) } : {}),
    ...(events ? { events: events.map(eventView) } : {}),
  };
}

export function eventView(event: EventRecord) {
  return { at: iso(event.at), kind: event.kind, message: event.message };
}

export function hostView(host: HostRecord & { slotsFree: number; connected: boolean }) {
  return {
    name: host.name,
    pool: host.pool,
    state: host.state,
    connected: host.connected,
    slots: host.slots,
    slotsFree: host.slotsFree,
    labels: host.labels,
    facts: host.facts,
    lastSeen: iso(host.lastSeen),
  };
}
