// A slice of the LCG-2005-1 trace made into a replay of a few minutes: the jobs' submit times
// compressed (`compress` trace seconds pass in one real second) and their run times scaled down
// (divided by `runScale`, then held between `minRunSeconds` and `maxRunSeconds`, so that the
// trace's day-long jobs do not set the makespan alone). Pure: the trace comes in read.

export interface TraceJob {
  /** Seconds from the trace's first job. */
  submitAt: number;
  runSeconds: number;
}

export interface SliceOptions {
  /** Jobs of the trace to skip first. */
  skip: number;
  jobs: number;
  compress: number;
  runScale: number;
  minRunSeconds: number;
  maxRunSeconds: number;
}

export interface ReplayJob {
  /** The job's place in the slice (its name and submit key carry it). */
  index: number;
  /** Milliseconds after the replay's start. */
  submitAtMs: number;
  /** How long it sleeps, rounded to milliseconds. */
  runSeconds: number;
}

export function sliceOfTrace(trace: readonly TraceJob[], options: SliceOptions): ReplayJob[] {
  for (const key of ["compress", "runScale"] as const) {
    if (!(options[key] > 0)) throw new Error(`${key} must be positive, not ${options[key]}`);
  }
  if (!(options.minRunSeconds <= options.maxRunSeconds))
    throw new Error(`minRunSeconds ${options.minRunSeconds} is above maxRunSeconds ${options.maxRunSeconds}`);
  const slice = trace.slice(options.skip, options.skip + options.jobs);
  const first = slice[0]?.submitAt ?? 0;
  return slice.map((job, index) => ({
    index,
    submitAtMs: Math.round(((job.submitAt - first) / options.compress) * 1000),
    runSeconds:
      Math.round(
        Math.min(options.maxRunSeconds, Math.max(options.minRunSeconds, job.runSeconds / options.runScale)) *
          1000,
      ) / 1000,
  }));
}

/** The least work the slice asks of `slots` slots: its summed run time over them, or its longest job. */
export function lowerBoundSeconds(jobs: readonly ReplayJob[], slots: number): number {
  let total = 0;
  let longest = 0;
  let lastEnd = 0;
  for (const job of jobs) {
    total += job.runSeconds;
    longest = Math.max(longest, job.runSeconds);
    lastEnd = Math.max(lastEnd, job.submitAtMs / 1000 + job.runSeconds);
  }
  return Math.max(total / slots, longest, lastEnd);
}
