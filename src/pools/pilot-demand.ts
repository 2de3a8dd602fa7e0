// How many pilots a pool should submit now (HyperQueue's autoalloc, Parsl's blocks): enough for the
// work that could run in the pool and has no room, within maxPilots in all and backlog waiting.

export interface PilotCounts {
  pending: number;
  running: number;
  ending: number;
}

export interface DemandInput {
  /** Cpus of ready tasks that could run in the pool and find no room there now. */
  cpusWithoutRoom: number;
  pilots: PilotCounts;
  maxPilots: number;
  backlog: number;
  slotsPerPilot: number;
}

export function pilotsToStart(input: DemandInput): number {
  const { cpusWithoutRoom, pilots, maxPilots, backlog, slotsPerPilot } = input;
  if (cpusWithoutRoom <= 0) return 0;
  // Pilots waiting in the queue will bring their slots: count them against the work.
  const wanted = Math.ceil(cpusWithoutRoom / slotsPerPilot) - pilots.pending;
  const underMax = maxPilots - (pilots.pending + pilots.running + pilots.ending);
  const underBacklog = backlog - pilots.pending;
  return Math.max(0, Math.min(wanted, underMax, underBacklog));
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
