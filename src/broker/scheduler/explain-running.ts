// Explain for a running task: the rescheduling estimate (the gain the task would see on each
// candidate host, GridWay's rescheduling, as the next pass weighs it) and whether it is a
// preemption candidate (GrADS). A task the rules have not weighed says it has no estimate and has
// not been assessed, rather than guessing.

/** The gain a running task would see on another host: 0.3 means 30 % faster there. */
export interface ReschedulingEstimate {
  host: string;
  gain: number;
}

/** One live attempt of the job, with what rescheduling and preemption say of it. */
export interface LiveTaskAssessment {
  index: number;
  attempt: number;
  host: string;
  /** The last rescheduling estimate, per candidate host; absent until rescheduling has made one. */
  estimates?: readonly ReschedulingEstimate[];
  /** When that estimate was made (ms). */
  estimatedAt?: number;
  /** Whether preemption would stop this task for a waiting job, and why (or why not); absent until assessed. */
  preemption?: { candidate: boolean; reason: string };
}

export interface RunningTaskExplanation {
  task: number;
  attempt: number;
  host: string;
  /** Best gain first; null when there is no estimate yet. */
  estimates: ReschedulingEstimate[] | null;
  estimatedAt: string | null;
  preemption: { candidate: boolean; reason: string } | null;
  /** The sentence the CLI prints. */
  line: string;
}

export function explainRunningTask(task: LiveTaskAssessment, now: number): RunningTaskExplanation {
  const estimates = task.estimates ? [...task.estimates].sort((a, b) => b.gain - a.gain) : null;
  const preemption = task.preemption ?? null;
  let rescheduling = "no rescheduling estimate yet";
  if (estimates) {
    const age =
      task.estimatedAt === undefined
        ? ""
        : ` ${Math.max(0, Math.round((now - task.estimatedAt) / 1000))} s ago`;
    rescheduling =
      estimates.length === 0
        ? `last rescheduling estimate${age}: no other host could take it`
        : `last rescheduling estimate${age}: ${estimates.map((each) => `${each.host} ${formatGain(each.gain)}`).join(", ")}`;
  }
  const preempting = preemption
    ? `${preemption.candidate ? "a preemption candidate" : "not a preemption candidate"}: ${preemption.reason}`
    : "not assessed for preemption yet";
  return {
    task: task.index,
    attempt: task.attempt,
    host: task.host,
    estimates,
    estimatedAt: task.estimatedAt === undefined ? null : new Date(task.estimatedAt).toISOString(),
    preemption,
    line: `task ${task.index} (attempt ${task.attempt}) runs on ${task.host}: ${rescheduling}; ${preempting}`,
  };
}

/** `+45 %`, `-10 %`. */
export function formatGain(gain: number): string {
  const percent = Math.round(gain * 100);
  return `${percent >= 0 ? "+" : ""}${percent} %`;
}
