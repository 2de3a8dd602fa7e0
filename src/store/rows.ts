// Records as table rows and back, shared by the SQLite and PostgreSQL stores: the column order is
// the one in each migration's CREATE TABLE. The two databases differ only in how they keep
// booleans and JSON, which each store says with a RowCodec.

import type { AttemptRecord, EventRecord, HostRecord, JobRecord, TaskRecord } from "../model/records.ts";

export type RowValue = string | number | boolean | null;
export type Row = readonly unknown[];

export interface RowCodec {
  /** A boolean as the database keeps it (SQLite: 0/1, PostgreSQL: boolean). */
  bool(value: boolean): number | boolean;
  readBool(value: unknown): boolean;
  /** A JSON column as read back: text to parse (SQLite) or already parsed (PostgreSQL). */
  readJson(value: unknown): unknown;
}

export function json(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError("value cannot be stored as JSON");
  return text;
}

function jsonOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : json(value);
}

export function jobRow(job: JobRecord, codec: RowCodec): RowValue[] {
  return [
    job.id,
    job.name,
    job.owner,
    job.state,
    job.priority,
    codec.bool(job.held),
    codec.bool(job.cancelRequested),
    job.createdAt,
    job.endedAt ?? null,
    json(job.spec),
    json(job.inputs),
  ];
}

export function taskRow(task: TaskRecord): RowValue[] {
  return [
    task.jobId,
    task.index,
    task.state,
    task.attempts,
    task.failures,
    task.losses,
    task.notBefore ?? null,
    task.resultAttempt ?? null,
    jsonOrNull(task.checkpoint),
  ];
}

export function attemptRow(attempt: AttemptRecord, codec: RowCodec): RowValue[] {
  return [
    attempt.jobId,
    attempt.taskIndex,
    attempt.number,
    attempt.host,
    attempt.state,
    attempt.outcome ?? null,
    attempt.reason ?? null,
    attempt.exitCode ?? null,
    codec.bool(attempt.restarted),
    attempt.startedAt,
    attempt.endedAt ?? null,
  ];
}

export function eventRow(event: EventRecord): RowValue[] {
  return [event.jobId, event.at, event.kind, event.message];
}

export function hostRow(host: HostRecord): RowValue[] {
  return [host.name, host.pool, host.state, host.slots, json(host.labels), json(host.facts), host.lastSeen];
}

export function rowToJob(row: Row, codec: RowCodec): JobRecord {
  return {
    id: row[0] as string,
    name: row[1] as string,
    owner: row[2] as string,
    state: row[3] as JobRecord["state"],
    priority: row[4] as number,
    held: codec.readBool(row[5]),
    cancelRequested: codec.readBool(row[6]),
    createdAt: row[7] as number,
    endedAt: row[8] as number | null,
    spec: codec.readJson(row[9]) as JobRecord["spec"],
    inputs: codec.readJson(row[10]) as string[],
  };
}

export function rowToTask(row: Row, codec: RowCodec): TaskRecord {
  return {
    jobId: row[0] as string,
    index: row[1] as number,
    state: row[2] as TaskRecord["state"],
    attempts: row[3] as number,
    failures: row[4] as number,
    losses: row[5] as number,
    notBefore: row[6] as number | null,
    resultAttempt: row[7] as number | null,
    checkpoint: row[8] === null ? null : (codec.readJson(row[8]) as TaskRecord["checkpoint"]),
  };
}

export function rowToAttempt(row: Row, codec: RowCodec): AttemptRecord {
  return {
    jobId: row[0] as string,
    taskIndex: row[1] as number,
    number: row[2] as number,
    host: row[3] as string,
    state: row[4] as AttemptRecord["state"],
    outcome: row[5] as AttemptRecord["outcome"],
    reason: row[6] as string | null,
    exitCode: row[7] as number | null,
    restarted: codec.readBool(row[8]),
    startedAt: row[9] as number,
    endedAt: row[10] as number | null,
  };
}

export function rowToHost(row: Row, codec: RowCodec): HostRecord {
  return {
    name: row[0] as string,
    pool: row[1] as string,
    state: row[2] as HostRecord["state"],
    slots: row[3] as number,
    labels: codec.readJson(row[4]) as HostRecord["labels"],
    facts: codec.readJson(row[5]) as HostRecord["facts"],
    lastSeen: row[6] as number,
  };
}

export function rowToEvent(row: Row): EventRecord {
  return { jobId: row[0] as string, at: row[1] as number, kind: row[2] as string, message: row[3] as string };
}
