// Walltime-aware placement: a pilot's agent runs inside a batch job that the batch system kills at
// its walltime. Work is placed on a pilot only when it can end before the walltime (or can move,
// because it checkpoints), and `marginSeconds` before the walltime the pilot takes no more work and
// its tasks migrate with their checkpoints: the batch system never kills one, and a walltime is
// never charged to a task's retry budget (outcome `migrated`). Pure: the time comes in.

import type { StopEntry, Walltime } from "./view.ts";

/** Seconds before a pilot's walltime when it stops taking work and its tasks move (`--walltime-margin-seconds`). */
export const WALLTIME_MARGIN_SECONDS = 60;

/** A host's walltime at `now`, or undefined for a host without one. */
export function walltimeAt(endsAt: number | null, now: number, marginSeconds: number): Walltime | undefined {
  if (endsAt === null) return undefined;
  return { secondsLeft: Math.max(0, (endsAt - now) / 1000), marginSeconds };
}

/** Seconds a host can still run new work before its margin: Infinity without a walltime. */
export function usableSeconds(walltime: Walltime | undefined): number {
  if (!walltime) return Number.POSITIVE_INFINITY;
  return Math.max(0, walltime.secondsLeft - walltime.marginSeconds);
}

/** Whether the host has reached its margin: no new work, and its tasks move away. */
export function pastWalltimeMargin(walltime: Walltime | undefined): boolean {
  return walltime !== undefined && walltime.secondsLeft <= walltime.marginSeconds;
}

/** What the walltime rule needs of a job. */
export interface WalltimeJob {
  /** How long a task is expected to run: its timeLimitSeconds, else what earlier tasks took; null when unknown. */
  expectedSeconds?: number | null;
  /** Whether the job's tasks checkpoint (one of them has): such a task may start and move before the walltime. */
  checkpoints?: boolean;
}

/**
 * Why the host may not take the job because of its walltime, or null: a pilot past its margin takes
 * nothing; a task expected to run longer than the pilot has left is placed only if it checkpoints.
 */
export function walltimeInfeasibility(job: WalltimeJob, walltime: Walltime | undefined): string | null {
  if (!walltime) return null;
  if (pastWalltimeMargin(walltime))
    return `pilot walltime ends in ${Math.round(walltime.secondsLeft)} s (within the ${walltime.marginSeconds} s margin)`;
  const usable = usableSeconds(walltime);
  const expected = job.expectedSeconds;
  if (expected === null || expected === undefined || expected <= usable) return null;
  if (job.checkpoints) return null;
  return `task needs about ${Math.round(expected)} s, pilot has ${Math.round(usable)} s before its walltime margin, and the job has no checkpoint to move with`;
}

/** A live attempt on a host whose walltime may be near. */
export interface AttemptOnHost {
  jobId: string;
  taskIndex: number;
  attempt: number;
  /** Already asked to stop: left alone. */
  stopping: boolean;
}

/**
 * The stops a host past its walltime margin needs: every live attempt migrates (with its
 * checkpoint, to any other host). None when the host has time left.
 */
export function walltimeStops(
  walltime: Walltime | undefined,
  attempts: Iterable<AttemptOnHost>,
): StopEntry[] {
  if (!pastWalltimeMargin(walltime)) return [];
  const stops: StopEntry[] = [];
  for (const attempt of attempts) {
    if (attempt.stopping) continue;
    stops.push({
      jobId: attempt.jobId,
      taskIndex: attempt.taskIndex,
      attempt: attempt.attempt,
      intent: { outcome: "migrated", reason: { kind: "pilot-walltime" } },
      migrateTo: { to: null },
    });
  }
  return stops;
}
