// What an attempt used, as its agents measured it: wall time, CPU time (user and system) and peak
// memory, from the attempt's cgroup (without one: the CPU time the supervisor's shell counted for
// the job, no peak memory). Kept on the attempt and in the accounting rows; read by fair share
// and `steward acct`.

export interface AttemptUsage {
  /** CPU time in user mode; null when not measured (an agent whose job's supervisor vanished). */
  userSeconds: number | null;
  systemSeconds: number | null;
  /** The most memory the attempt held at once, MB; null when not measured (no cgroup). */
  peakMemoryMb: number | null;
  /** From the job's start to its end, as the agent saw it. */
  wallSeconds: number;
}

/** User plus system CPU seconds, or null when either was not measured. */
export function measuredCpuSeconds(usage: AttemptUsage | null | undefined): number | null {
  if (!usage || usage.userSeconds === null || usage.systemSeconds === null) return null;
  return usage.userSeconds + usage.systemSeconds;
}

function sumOrNull(values: readonly (number | null)[]): number | null {
  let total = 0;
  for (const value of values) {
    if (value === null) return null;
    total += value;
  }
  return total;
}

/**
 * A multi-node attempt's usage from its ranks' own: CPU time and peak memory added up (each rank
 * has its host's memory), wall time the longest. A figure some rank did not measure is null; no
 * rank measured at all: null.
 */
export function sumUsage(ranks: readonly (AttemptUsage | null | undefined)[]): AttemptUsage | null {
  if (ranks.length === 0 || ranks.some((rank) => !rank)) return null;
  const measured = ranks as readonly AttemptUsage[];
  return {
    wallSeconds: Math.max(...measured.map((rank) => rank.wallSeconds)),
    userSeconds: sumOrNull(measured.map((rank) => rank.userSeconds)),
    systemSeconds: sumOrNull(measured.map((rank) => rank.systemSeconds)),
    peakMemoryMb: sumOrNull(measured.map((rank) => rank.peakMemoryMb)),
  };
}

/** The signal that ended a job, from its exit code as its supervisor's shell gives it (128+N); else null. */
export function exitSignal(exitCode: number | null): number | null {
  return exitCode !== null && exitCode > 128 && exitCode < 160 ? exitCode - 128 : null;
}

/** How an attempt's job ended: "exit N", "signal N", or null when unknown. */
export function exitStatus(exitCode: number | null): string | null {
  if (exitCode === null) return null;
  const signal = exitSignal(exitCode);
  return signal === null ? `exit ${exitCode}` : `signal ${signal}`;
}
