// Fair share between owners within one priority: the owner with the highest fair-share factor
// goes first (fair-share-tree.ts: the accounts' shares against the cpu-seconds each used, decayed
// as HTCondor's accountant and Slurm's PriorityDecayHalfLife do; measured CPU time where the
// agents measured it), ties broken by the fewest cpus running now, then by the cpu-seconds used,
// then by submit order. Pure: usage and the time come in.

/** Usage halves every this many seconds (`--fair-share-half-life`; Slurm's PriorityDecayHalfLife default: 7 days). */
export const FAIR_SHARE_HALF_LIFE_SECONDS = 7 * 86_400;

/** An owner's standing at one moment. */
export interface OwnerShare {
  /** Cpus of the owner's attempts running now (placements of this pass included). */
  runningCpus: number;
  /** Cpu-seconds the owner used, decayed to now: ended attempts, and what running ones accrued so far. */
  recentCpuSeconds: number;
  /**
   * The owner's fair-share factor (fair-share-tree.ts), 1 down to 0, as of the start of the pass;
   * absent reads as 1, an owner who used nothing.
   */
  factor?: number;
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

/** Decayed usage: `value` recorded at `at` (ms), seen at `now` (ms); as it was when `now` is not later. */
export function decayedUsage(
  value: number,
  at: number,
  now: number,
  halfLifeSeconds: number = FAIR_SHARE_HALF_LIFE_SECONDS,
): number {
  return value * 0.5 ** (Math.max(0, now - at) / 1000 / halfLifeSeconds);
}

/**
 * Negative when owner `a` should be served before owner `b`: the higher fair-share factor first,
 * then the fewer cpus running, then the fewer cpu-seconds used; 0 leaves it to submit order.
 */
export function compareOwnerShares(a: OwnerShare, b: OwnerShare): number {
  return (
    (b.factor ?? 1) - (a.factor ?? 1) ||
    a.runningCpus - b.runningCpus ||
    a.recentCpuSeconds - b.recentCpuSeconds
  );
}
