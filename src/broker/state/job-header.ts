// A job's header: the line `ps` prints, its owner for access checks, its state for the jobs that
// depend on it. Once a job has ended, its header is all the server keeps of it in memory: its
// tasks, attempts and job file stay in the store and are read from there when asked for
// (ReadModel.readJob), so a long history costs a small object per job, not every task and attempt it
// ever had.

import type { JobHead } from "../../common/model/records.ts";
import type { JobEntry } from "./job-entry.ts";

/** A job in memory as its summary shows it (its header as it is now: JobEntry.header). */
export function headOf(job: JobEntry): JobHead {
  return { header: job.header, record: job.record };
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
