// Remaining time of a running attempt from the progress its job reports (GrADS appendix A.2, with
// the job's own progress in place of a performance model): the rate between the first and the last
// progress report of the attempt gives the time left for what remains. Pure: samples and the time in.

/** One progress report: the fraction the job wrote (0..1) and when the server heard it. */
export interface ProgressSample {
  fraction: number;
  at: number;
}

/** What is known of a running attempt's progress. */
export interface AttemptProgress {
  /** When the attempt started (ms). */
  startedAt: number;
  /**
   * The fraction the attempt started from: 0 for a first attempt; for one restarted from a
   * checkpoint, its first report (it resumes where the checkpoint left it).
   */
  baseline: ProgressSample | null;
  /** The latest report, or null when the job has reported none. */
  last: ProgressSample | null;
}

/** Below this much progress since the baseline, the rate is too uncertain to estimate from. */
export const MIN_MEASURED_PROGRESS = 0.001;

/** The start point the rate is measured from: the baseline, or 0 at the attempt's start. */
function origin(progress: AttemptProgress): ProgressSample {
  return progress.baseline ?? { fraction: 0, at: progress.startedAt };
}

/** Progress made by this attempt (since its start or its restart), or null when none is reported. */
export function progressMade(progress: AttemptProgress): number | null {
  if (!progress.last) return null;
  return Math.max(0, progress.last.fraction - origin(progress).fraction);
}

/** Progress per second on this host, or null when it cannot be estimated yet. */
export function progressRate(progress: AttemptProgress): number | null {
  const { last } = progress;
  if (!last) return null;
  const from = origin(progress);
  const gained = last.fraction - from.fraction;
  const seconds = (last.at - from.at) / 1000;
  if (gained < MIN_MEASURED_PROGRESS || seconds <= 0) return null;
  return gained / seconds;
}

/** Seconds the attempt still needs on its host at `now`, or null when it cannot be estimated. */
export function remainingSeconds(progress: AttemptProgress, now: number): number | null {
  const rate = progressRate(progress);
  if (rate === null || !progress.last) return null;
  const sinceReport = Math.max(0, (now - progress.last.at) / 1000);
  return Math.max(0, (1 - progress.last.fraction) / rate - sinceReport);
}

/** Seconds the whole task would take on its host at the measured rate, or null. */
export function predictedSeconds(progress: AttemptProgress): number | null {
  const rate = progressRate(progress);
  return rate === null ? null : 1 / rate;
}
