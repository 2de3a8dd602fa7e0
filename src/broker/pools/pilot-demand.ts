// How many pilots a pool should submit now (HyperQueue's autoalloc, Parsl's blocks): enough for the
// work offered to the pool that its hosts and pending pilots do not cover, within maxPilots in all
// and backlog waiting; and when a pool counts as not starting pilots (failures, queue wait).

export interface PilotCounts {
  pending: number;
  running: number;
  ending: number;
}

export interface DemandInput {
  /** Cpus of ready work that only new pilots of the pool will run (pools/pool-demand.ts: room and pending pilots already counted). */
  cpusWanted: number;
  pilots: PilotCounts;
  maxPilots: number;
  backlog: number;
  slotsPerPilot: number;
}

/** Pilots the pool may still submit now: within maxPilots in all and backlog pending. */
export function pilotsAllowed(input: Omit<DemandInput, "cpusWanted">): number {
  const { pilots, maxPilots, backlog } = input;
  const underMax = maxPilots - (pilots.pending + pilots.running + pilots.ending);
  const underBacklog = backlog - pilots.pending;
  return Math.max(0, Math.min(underMax, underBacklog));
}

export function pilotsToStart(input: DemandInput): number {
  if (input.cpusWanted <= 0) return 0;
  return Math.min(Math.ceil(input.cpusWanted / input.slotsPerPilot), pilotsAllowed(input));
}

/** A pilot pending in the batch queue longer than this many seconds is cancelled (the pool's, or a job's shorter one). */
export function queueWaitExceeded(pendingSince: number, now: number, maxQueueWaitSeconds: number): boolean {
  return now - pendingSince > maxQueueWaitSeconds * 1000;
}

/** Seconds to wait before submitting again after `failures` failed submissions in a row. */
export const POOL_RETRY_MAX_SECONDS = 60;
export const POOL_RETRY_FIRST_SECONDS = 5;
/** Failed submissions in a row after which a pool is `unavailable` (and tried again after the back-off). */
export const POOL_FAILURES_UNAVAILABLE = 3;

export function poolRetrySeconds(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(POOL_RETRY_MAX_SECONDS, POOL_RETRY_FIRST_SECONDS * 2 ** (failures - 1));
}
