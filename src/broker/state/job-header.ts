// A job's header: the line `ps` prints, its owner for access checks, its state for the jobs that
// depend on it. Once a job has ended, its header is all the server keeps of it in memory: its
// tasks, attempts and job file stay in the store and are read from there when asked for
// (ReadModel.readJob), so a long history costs a small object per job, not every task and attempt it
// ever had.

import type { JobHeader, JobRecord } from "../../common/model/records.ts";
import type { JobEntry } from "./job-entry.ts";

export function headerOf(job: JobEntry): JobHeader {
  const { record } = job;
  return {
    id: record.id,
    name: record.name,
    owner: record.owner,
    state: record.state,
    priority: record.priority,
    createdAt: record.createdAt,
    endedAt: record.endedAt,
    taskCount: job.tasks.length,
    counts: { ...job.counts },
    qos: job.qos,
  };
}

/** A job as its summary shows it: its header (state, counts) and its record (job file, workflow). */
export interface JobHead {
  header: JobHeader;
  record: JobRecord;
}

/** A job in memory as its summary shows it. */
export function headOf(job: JobEntry): JobHead {
  return { header: headerOf(job), record: job.record };
}

/**
 * Whether a job's entry may leave memory, leaving its header: every task ended and no attempt of
 * it still live (a replica that lost the race may still be stopping, and its end must find the job).
 */
export function mayRetire(job: JobEntry): boolean {
  if (!job.isEnded()) return false;
  for (const _ of job.allLiveAttempts()) return false;
  return true;
}
