// Fair share between owners within one priority: the owner with the fewest cpus running now goes
// first, ties broken by the cpu-seconds each used recently (decayed, as HTCondor's accountant does
// with PRIORITY_HALFLIFE; measured CPU time where the agents measured it), then by submit order.
// Pure: usage and the time come in.

/** Recent usage halves every this many seconds (HTCondor's PRIORITY_HALFLIFE default: one day). */
export const FAIR_SHARE_HALF_LIFE_SECONDS = 86_400;

/** An owner's standing at one moment. */
export interface OwnerShare {
  /** Cpus of the owner's attempts running now (placements of this pass included). */
  runningCpus: number;
  /** Cpu-seconds of the owner's ended attempts, decayed to now. */
  recentCpuSeconds: number;
}

export const NO_SHARE: OwnerShare = { runningCpus: 0, recentCpuSeconds: 0 };

/**
 * The cpu-seconds an ended attempt counts for in fair share: its CPU time as its agents measured
 * it (user + system, every rank) where they did, else the cpus it held times the time it ran.
 * A job that waits on I/O or sleeps is charged for what it burnt, not for the slots it held.
 */
export function attemptCpuSeconds(
  heldCpus: number,
  startedAt: number,
  endedAt: number,
  measuredCpuSeconds: number | null,
): number {
  if (measuredCpuSeconds !== null) return measuredCpuSeconds;
  return (heldCpus * Math.max(0, endedAt - startedAt)) / 1000;
}

/** Decayed usage: `value` recorded at `at` (ms), seen at `now` (ms). */
export function decayedUsage(
  value: number,
  at: number,
  now: number,
  halfLifeSeconds: number = FAIR_SHARE_HALF_LIFE_SECONDS,
): number {
  if (value === 0 || now <= at) return value;
  return value * 0.5 ** ((now - at) / 1000 / halfLifeSeconds);
}

/** Negative when owner `a` should be served before owner `b`; 0 leaves it to submit order. */
export function compareOwnerShares(a: OwnerShare, b: OwnerShare): number {
  return a.runningCpus - b.runningCpus || a.recentCpuSeconds - b.recentCpuSeconds;
}
