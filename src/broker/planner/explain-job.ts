// Explain over the cluster state: the job-level reasons (state/job-reasons.ts), then the next
// scheduling pass run dry on the very input a real pass gets (plan-pass.ts passInput), with
// preemption's word on each of the job's running tasks. Reads the state only.

import { progressMade } from "../scheduler/estimate.ts";
import { type Explanation, explain } from "../scheduler/explain.ts";
import type { LiveTaskAssessment } from "../scheduler/explain-running.ts";
import { type MetaschedulingPolicy, policyOf } from "../scheduler/policy.ts";
import { describeAhead } from "../scheduler/queue-position.ts";
import { gangShortfall } from "../scheduler/stages/gang.ts";
import { notPreemptible } from "../scheduler/stages/preemption.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import type { JobEntry } from "../state/job-entry.ts";
import { jobReasons } from "../state/job-reasons.ts";
import { passInput, runningView } from "./plan-pass.ts";

export type JobExplanation = { reasons: string[]; othersAhead: number } & Explanation;

/**
 * Why a job's tasks wait (job-level reasons, then what the next pass does for it, host by host),
 * and what its running tasks face. For a `viewer` (a user, who sees only their own jobs) other
 * users' jobs are neither named nor described: those ahead in the queue are counted
 * (`othersAhead`), a dependency's state is not told.
 */
export function explainJob(
  state: ClusterState,
  job: JobEntry,
  now: number,
  options: Partial<MetaschedulingPolicy> = {},
  viewer: string | null = null,
): JobExplanation {
  const policy = policyOf(options);
  const hosts = state.hostViews(now, policy.walltimeMarginSeconds);
  const running: LiveTaskAssessment[] = [];
  for (const attempt of job.allLiveAttempts()) {
    const live = state.liveAttempt(attempt.jobId, attempt.taskIndex, attempt.number);
    if (!live) continue;
    const view = runningView(state, live);
    const notCandidate = notPreemptible(view, policy);
    running.push({
      index: attempt.taskIndex,
      attempt: attempt.number,
      host: attempt.host,
      preemption: {
        candidate: notCandidate === null,
        reason:
          notCandidate ??
          `${(progressMade(view.progress) ?? 0).toFixed(2)} progress since its start, with a checkpoint`,
      },
    });
  }
  const owners = state.owners.shares(now);
  // A pass that would change nothing is not run: explain runs one over no jobs, which starts nothing.
  const pass = passInput(state, now, options) ?? { now, jobs: [], hosts, owners };
  const explanation = explain({
    now,
    job,
    hosts,
    queue: [...state.jobs.values()].filter((each) => each.schedulable),
    owners,
    running,
    pass,
  });
  const visible = (other: string | undefined) => viewer === null || other === undefined || other === viewer;
  const reasons = jobReasons(state, job, now, (dependency) => visible(state.jobOwner(dependency)));
  // A gang waits for all its hosts at once: how many match and have room now.
  const gang = job.gang;
  if (gang && job.tasks[0].state === "pending")
    reasons.push(
      gangShortfall(
        Math.ceil(gang.nodes / gang.nodesPerHost),
        explanation.summary.matching,
        explanation.summary.withRoom,
      ),
    );
  const ahead = explanation.ahead.filter((other) => visible(other.owner ?? undefined));
  const othersAhead = explanation.ahead.length - ahead.length;
  if (explanation.ahead.length > 0) reasons.push(describeAhead(ahead, undefined, othersAhead));
  return { reasons, ...explanation, ahead, othersAhead };
}
