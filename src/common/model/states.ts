// The state vocabularies of the JSON shapes (jobs, tasks, attempts, hosts). Tests outside the repository rely on these words.

export const JOB_STATES = [
  "held",
  "waiting",
  "pending",
  "running",
  "succeeded",
  "failed",
  "cancelled",
] as const;
export type JobState = (typeof JOB_STATES)[number];
export type TaskState = JobState;

export const HOST_STATES = ["ready", "draining", "lost"] as const;
export type HostState = (typeof HOST_STATES)[number];

export const ATTEMPT_STATES = ["starting", "running", "stopping", "ended"] as const;
export type AttemptState = (typeof ATTEMPT_STATES)[number];

export const ATTEMPT_OUTCOMES = [
  "succeeded",
  "failed",
  "lost",
  "preempted",
  "migrated",
  "cancelled",
  "timed_out",
] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/**
 * An ended attempt's outcome as usage accounting (`steward acct`) tells it: the attempt's own, but
 * `held` for one a hold stopped (stored `preempted` with reason `held`; not an attempt outcome).
 */
export const ACCOUNTING_OUTCOMES = [...ATTEMPT_OUTCOMES, "held"] as const;
export type AccountingOutcome = (typeof ACCOUNTING_OUTCOMES)[number];

/** The outcomes a stop sent by the server may end an attempt with. */
export const STOP_OUTCOMES = ["cancelled", "preempted", "migrated", "lost"] as const;
export type StopOutcome = (typeof STOP_OUTCOMES)[number];

const ENDED_STATES: ReadonlySet<TaskState> = new Set(["succeeded", "failed", "cancelled"]);

export function isEndedState(state: TaskState): boolean {
  return ENDED_STATES.has(state);
}
