// The client's side of the requests that name many jobs at once (GET /api/v1/jobs/states, POST
// /api/v1/jobs/cancel): one request for up to MAX_JOBS_NAMED ids, a longer list in requests of
// that many.

import { type JobStates, MAX_JOBS_NAMED } from "../common/api/job-states.ts";
import type { JobState } from "../common/model/states.ts";
import type { ApiClient } from "./client.ts";

/** Each job's state by its id; null: no such job (or another user's). */
export type StatesById = Map<string, JobState | null>;

/** `items` in runs of at most `size`, in order (none for an empty list). */
export function batches<T>(items: readonly T[], size = MAX_JOBS_NAMED): T[][] {
  const runs: T[][] = [];
  for (let start = 0; start < items.length; start += size) runs.push(items.slice(start, start + size));
  return runs;
}

/** The state of each job of `ids`, in one request (one per MAX_JOBS_NAMED ids). */
export async function jobStates(client: ApiClient, ids: readonly string[]): Promise<StatesById> {
  const states: StatesById = new Map();
  for (const run of batches(ids)) {
    const answer = await client.json<JobStates>("GET", "/api/v1/jobs/states", {
      query: { ids: run.join(",") },
    });
    for (const job of answer.jobs) states.set(job.id, job.state);
  }
  return states;
}

/**
 * Cancels the jobs of `ids` in one request (one per MAX_JOBS_NAMED ids): their states once the
 * cancels are durable. Sent again when an answer is lost: a cancel repeated changes nothing.
 */
export async function cancelJobs(client: ApiClient, ids: readonly string[]): Promise<StatesById> {
  const states: StatesById = new Map();
  for (const run of batches(ids)) {
    const answer = await client.json<JobStates>("POST", "/api/v1/jobs/cancel", {
      json: { ids: run },
      idempotent: true,
    });
    for (const job of answer.jobs) states.set(job.id, job.state);
  }
  return states;
}
