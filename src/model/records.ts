// The durable records: what the store keeps and what the server recovers from at start.
// Times are milliseconds since the epoch; the API turns them into ISO-8601.

import type { JobSpec } from "./jobfile.ts";
import type { AttemptOutcome, AttemptState, HostState, JobState, TaskState } from "./states.ts";

export interface JobRecord {
  id: string;
  name: string;
  owner: string;
  state: JobState;
  priority: number;
  /** Whether a user holds the job; kept apart from `state` so release knows where to go back to. */
  held: boolean;
  /** Cancel was asked: no task starts again, running attempts are being stopped. */
  cancelRequested: boolean;
  createdAt: number;
  endedAt: number | null;
  /** The job file as validated at submit, with defaults filled in. */
  spec: JobSpec;
  /** Input file names (relative paths) stored in the blob store under the job. */
  inputs: string[];
}

export interface CheckpointInfo {
  generation: number;
  bytes: number;
  at: number;
}

export interface TaskRecord {
  jobId: string;
  index: number;
  state: TaskState;
  /** Attempts started so far; the next attempt's number is attempts + 1. */
  attempts: number;
  /** Attempts ended by an application failure (non-zero exit, time limit): they use up retry.maxAttempts. */
  failures: number;
  /** Attempts ended lost: a task lost too often is failed as poison. */
  losses: number;
  /** Earliest time the next attempt may start (retry back-off), or null. */
  notBefore: number | null;
  /** The attempt whose outputs are the task's committed result (guarantee 4), or null. */
  resultAttempt: number | null;
  checkpoint: CheckpointInfo | null;
}

export interface AttemptRecord {
  jobId: string;
  taskIndex: number;
  number: number;
  host: string;
  state: AttemptState;
  outcome: AttemptOutcome | null;
  reason: string | null;
  exitCode: number | null;
  restarted: boolean;
  startedAt: number;
  endedAt: number | null;
}

export interface EventRecord {
  jobId: string;
  at: number;
  kind: string;
  message: string;
}

export interface HostRecord {
  name: string;
  pool: string;
  state: HostState;
  slots: number;
  labels: Record<string, string>;
  facts: HostFacts;
  lastSeen: number;
}

/** The host facts of DESIGN.md ("Host facts"); `host` in CEL. Numbers are CEL doubles. */
export interface HostFacts {
  name: string;
  pool: string;
  os: string;
  arch: string;
  cpus: number;
  memoryMb: number;
  memFreeMb: number;
  load1: number;
  cpuFree: number;
  diskFreeMb: number;
  speed: number;
  labels: Record<string, string>;
  slotsFree: number;
}
