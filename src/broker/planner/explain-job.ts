// Explain over the cluster state: the job-level reasons (state/job-reasons.ts), then the next
// scheduling pass run dry on the very input a real pass gets (plan-pass.ts passInput), with
// preemption's word on each of the job's running tasks. Reads the state only.

import { uploadedInputs } from "../../common/model/input-spec.ts";
import type { JobSpec } from "../../common/model/job-spec.ts";
import type { EventRecord } from "../../common/model/records.ts";
import { progressMade } from "../scheduler/estimate.ts";
import { explain, type JobExplanation } from "../scheduler/explain.ts";
import type { LiveTaskAssessment } from "../scheduler/explain-running.ts";
import { policyOf } from "../scheduler/policy.ts";
import { compareQueueOrder } from "../scheduler/queue-order.ts";
import { describeAhead } from "../scheduler/queue-position.ts";
import { gangShortfall } from "../scheduler/stages/gang.ts";
import { notPreemptible } from "../scheduler/stages/preemption.ts";
import type { JobView, MetaschedulingPolicy, SchedulerState } from "../scheduler/view.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import { endedJobReasons } from "../state/ended-job-reasons.ts";
import type { JobEntry } from "../state/job-entry.ts";
import { jobReasons } from "../state/job-reasons.ts";
import { newJobEntry } from "../state/new-job.ts";
import { passInput, runningView } from "./plan-pass.ts";

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
  return explainEntry(state, job, now, options, viewer, false);
}

/**
 * What explain says of a job that has ended: how it ended (state/ended-job-reasons.ts, from its
 * events), and nothing of hosts or the next pass, which no longer apply to it.
 */
export function explainEnded(job: JobEntry, events: readonly EventRecord[]): JobExplanation {
  const { succeeded, failed, cancelled } = job.counts;
  return {
    reasons: endedJobReasons(
      { state: job.record.state, taskCount: job.tasks.length, counts: { succeeded, failed, cancelled } },
      events,
    ),
    othersAhead: 0,
    hosts: [],
    summary: { matching: 0, withRoom: 0 },
    clauses: [],
    ahead: [],
    running: [],
    nextPass: { starts: [], preempts: null, line: "nothing more is scheduled for it" },
    data: null,
  };
}

/** The id a job file explained before it is submitted goes by: no job's (job ids are numbers). */
export const DRAFT_JOB_ID = "dry-run";

/**
 * A job file explained as if it were submitted now by `owner` (`POST /api/v1/jobs?dryRun=1&explain=1`):
 * a job entry made as a submit makes it, which the state never holds, placed in the queue where a
 * submit would put it (last of its priority) for the dry pass. The file is valid already
 * (validateJobSpec); dependencies are the caller's to check.
 */
export function explainDraft(
  state: ClusterState,
  spec: JobSpec,
  owner: string,
  now: number,
  options: Partial<MetaschedulingPolicy> = {},
  viewer: string | null = null,
): { job: JobEntry; explanation: JobExplanation } {
  const job = draftJob(state, spec, owner, now);
  return { job, explanation: explainEntry(state, job, now, options, viewer, true) };
}

/**
 * The entry a submit of `spec` (admitted) by `owner` would make now (state/new-job.ts, as
 * reactor/handlers/submit.ts makes it), but for its id, outside the state.
 */
export function draftJob(state: ClusterState, spec: JobSpec, owner: string, now: number): JobEntry {
  const request = {
    id: DRAFT_JOB_ID,
    spec,
    owner,
    inputs: uploadedInputs(spec.inputs),
    submitKey: null,
    workflow: null,
  };
  return newJobEntry(state, request, now, state.nextSeq).job;
}

/** The queue's jobs with `draft` where a submit would put it (queue order). */
function withDraft(jobs: Iterable<JobView>, draft: JobEntry): JobView[] {
  const merged = [...jobs];
  if (!draft.schedulable) return merged;
  const at = merged.findIndex((other) => compareQueueOrder(draft, other) < 0);
  merged.splice(at < 0 ? merged.length : at, 0, draft);
  return merged;
}

function explainEntry(
  state: ClusterState,
  job: JobEntry,
  now: number,
  options: Partial<MetaschedulingPolicy>,
  viewer: string | null,
  draft: boolean,
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
  let pass: SchedulerState = passInput(state, now, options) ?? { now, jobs: [], hosts, owners };
  let queue: JobView[] = [...state.jobs.values()].filter((each) => each.schedulable);
  if (draft) {
    // Each owner's queue is then made from the jobs, the draft among them.
    pass = { ...pass, jobs: withDraft(pass.jobs, job), ownerQueues: undefined };
    queue = withDraft(queue, job);
  }
  const explanation = explain({
    now,
    job,
    hosts,
    queue,
    owners,
    running,
    pass,
    // What the hosts' caches hold, also when no pass would run now (data affinity).
    cached: state.cacheHolders.byDigest,
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
