// "Why is this job not running?" What the next scheduling pass does for the job, found by running
// that pass dry (schedule.ts, with a trace that records its reasons): explain decides nothing of
// its own, so it cannot say a job starts when the scheduler would not start it, or the other way
// round. Around it: host by host (HyperQueue's explain), through the same stages the scheduler
// uses; the requirements clause by clause (HTCondor's `condor_q -better-analyze`); how many hosts
// match and how many have room; whom the job waits behind in the queue; which hosts' caches hold
// its inputs (data affinity: explain-data.ts); and, for its running tasks, what rescheduling and
// preemption say. Pure: a snapshot and `now` in.

import type { CompiledExpression } from "../../common/model/cel.ts";
import {
  type Clause,
  evaluateClause,
  failingClauses,
  requirementClauses,
  whyClauseFails,
} from "../../common/model/cel-clauses.ts";
import type { HostFacts } from "../../common/model/host-facts.ts";
import { batchKey } from "./batches.ts";
import { type DataAffinityExplanation, explainDataAffinity } from "./explain-data.ts";
import {
  explainRunningTask,
  type LiveTaskAssessment,
  type ReschedulingEstimate,
  type RunningTaskExplanation,
} from "./explain-running.ts";
import type { OwnerShare } from "./fair-share.ts";
import { hostsOfPlacement, type Plan } from "./plan.ts";
import { RunningQuotas } from "./qos.ts";
import { jobsAhead } from "./queue-position.ts";
import { schedule } from "./schedule.ts";
import {
  FEASIBILITY_STAGES,
  type FeasibilityJob,
  infeasibility,
  requirementsHold,
} from "./stages/feasibility.ts";
import { capacityShortfall } from "./stages/fit.ts";
import type { CachedObjects, HostView, JobView, SchedulerState } from "./view.ts";

export interface HostExplanation {
  host: string;
  /** Every feasibility stage passes: the host matches the job (it may still be busy). */
  eligible: boolean;
  reason: string;
}

/** How many hosts match the job (every feasibility stage passes), and how many of those have room now. */
export interface MatchSummary {
  matching: number;
  withRoom: number;
}

/** One clause of the requirements over the hosts: where it holds, and why not elsewhere. */
export interface ClauseTally {
  clause: string;
  /** Hosts on which the clause holds, whatever the other clauses and stages say. */
  matching: number;
  failing: { host: string; reason: string }[];
}

export interface ExplainInput {
  now: number;
  job: JobView;
  hosts: readonly HostView[];
  /** The jobs with ready work, as a pass sees them (SchedulerState.jobs): whom the job waits behind. */
  queue: readonly JobView[];
  owners?: ReadonlyMap<string, OwnerShare>;
  /** The job's live attempts, with preemption's word on each; rescheduling's comes from the dry run. */
  running?: readonly LiveTaskAssessment[];
  /**
   * What the next scheduling pass is handed (the same `now`, hosts and owners): explain runs it dry.
   * Absent: a pass over `queue` and `hosts` alone.
   */
  pass?: SchedulerState;
  /** What the hosts' caches hold (data affinity), when no pass would run to carry it; absent: the pass's. */
  cached?: CachedObjects;
}

/** What the next scheduling pass does for the job: the scheduler's own decision, run dry. */
export interface NextPass {
  /** The job's tasks the pass starts, each with its hosts (rank 0 first); a replica is one more attempt of a running task. */
  starts: { task: number; hosts: string[]; replica: boolean }[];
  /** The pass stops a running task of lower priority on `host` and keeps its room for `task`. */
  preempts: { task: number; host: string } | null;
  /** The sentence the CLI prints. */
  line: string;
}

export interface Explanation {
  hosts: HostExplanation[];
  summary: MatchSummary;
  clauses: ClauseTally[];
  /** Jobs with work now that get their turn first and want the hosts this job matches, in turn order. */
  ahead: { id: string; priority: number; owner: string | null }[];
  running: RunningTaskExplanation[];
  nextPass: NextPass;
  /** Which hosts' caches hold the job's inputs (explain-data.ts); null when none of them is known by digest. */
  data: DataAffinityExplanation | null;
}

/**
 * What `steward explain` says of a job (broker/planner/explain-job.ts): the job-level reasons it
 * waits (or how it ended), how many other users' jobs are ahead of it (counted, not named), and the
 * next pass's explanation.
 */
export type JobExplanation = { reasons: string[]; othersAhead: number } & Explanation;

export function explain(input: ExplainInput): Explanation {
  const { job, hosts, now } = input;
  const pass: SchedulerState = input.pass ?? { now, jobs: input.queue, hosts, owners: input.owners };
  const dryRun = runDry(pass, job);
  const nextPass = describeNextPass(pass, job, dryRun);
  const startsOn = new Set(nextPass.starts.filter((each) => !each.replica).flatMap((each) => each.hosts));
  const assessed = hosts.map((host) => assessHost(job, host, startsOn.has(host.name)));
  const matchingHosts = hosts.filter((_, i) => assessed[i].explanation.eligible);
  const queued = input.queue.some((other) => other.id === job.id);
  // Jobs alike in resources and requirements want the same hosts: one answer per batch key.
  const wantsByKey = new Map<string, boolean>();
  const wantsSameHosts = (other: JobView): boolean => {
    const key = batchKey(other);
    let wants = wantsByKey.get(key);
    if (wants === undefined) {
      wants = matchingHosts.some((host) => infeasibility(other, host) === null);
      wantsByKey.set(key, wants);
    }
    return wants;
  };
  // A job its user's running limit holds back takes no room this pass: it is not ahead of anyone.
  const quotas = new RunningQuotas(pass.qos, pass.runningUse);
  const competes = (other: JobView) => wantsSameHosts(other) && quotas.held(other) === null;
  const ahead =
    queued && matchingHosts.length > 0 ? jobsAhead(job, input.queue, now, competes, input.owners) : [];
  return {
    hosts: assessed.map((each) => each.explanation),
    summary: {
      matching: matchingHosts.length,
      withRoom: assessed.filter((each) => each.explanation.eligible && each.room).length,
    },
    clauses: job.requirements ? tallyClauses(requirementClauses(job.requirements), hosts) : [],
    ahead: ahead.map((other) => ({ id: other.id, priority: other.priority, owner: other.owner ?? null })),
    running: (input.running ?? []).map((task) => {
      const estimates = task.estimates ?? dryRun.estimates.get(`${task.index}/${task.attempt}`);
      if (!estimates) return explainRunningTask(task, now);
      return explainRunningTask({ ...task, estimates, estimatedAt: task.estimatedAt ?? now }, now);
    }),
    nextPass,
    data: explainDataAffinity(job, input.cached ?? pass.cached),
  };
}

interface DryRun {
  plan: Plan;
  /** Whether the job's turn came in the queue's walk. */
  reached: boolean;
  /** Why the pass gave up on the job's next task, when it did. */
  unplaced: string | null;
  /** Why preemption stops nothing for the job, when it looked. */
  noPreemption: string | null;
  /** Rescheduling's estimates for the job's running tasks, by `task/attempt`. */
  estimates: Map<string, ReschedulingEstimate[]>;
}

/** The scheduling pass itself, on the same input, recording what it says of the job. */
function runDry(pass: SchedulerState, job: JobView): DryRun {
  let unplaced: string | null = null;
  let noPreemption: string | null = null;
  let reached = false;
  const estimates = new Map<string, ReschedulingEstimate[]>();
  const plan = schedule(pass, {
    turn: (other) => {
      if (other.id === job.id) reached = true;
    },
    unplaced: (other, why) => {
      if (other.id === job.id) unplaced ??= why;
    },
    noPreemption: (other, why) => {
      if (other.id === job.id) noPreemption = why;
    },
    rescheduling: (task, found) => {
      if (task.job.id === job.id) estimates.set(`${task.taskIndex}/${task.attempt}`, found);
    },
  });
  return { plan, reached, unplaced, noPreemption, estimates };
}

/** What the dry run does for the job, in a sentence. */
function describeNextPass(
  pass: SchedulerState,
  job: JobView,
  { plan, reached, unplaced, noPreemption }: DryRun,
): NextPass {
  const starts = plan.place
    .filter((placement) => placement.jobId === job.id)
    .map((placement) => ({
      task: placement.taskIndex,
      hosts: hostsOfPlacement(placement),
      replica: placement.kind === "replica",
    }));
  const preemption = plan.preempt.find((each) => each.place.jobId === job.id);
  const preempts = preemption ? { task: preemption.place.taskIndex, host: preemption.place.host } : null;
  let line: string;
  if (starts.length > 0) {
    const parts = starts.map(
      (each) => `${each.replica ? "a replica of " : ""}task ${each.task} on ${each.hosts.join(", ")}`,
    );
    line = `the next pass starts ${parts.join("; ")}`;
  } else if (preempts) {
    line = `the next pass stops a running task of lower priority on ${preempts.host} and keeps its room for task ${preempts.task}`;
  } else {
    const kept = (pass.reserved ?? []).find((room) => room.job.id === job.id);
    if (kept)
      line = `room on ${kept.host} is kept for task ${kept.taskIndex} (a preemption made it): it starts there once the stopped task has ended`;
    else if (![...pass.jobs].some((other) => other.id === job.id))
      // A job with a task ready that is not in the pass: no pass runs, for want of a free slot on
      // a host that takes work (plan-pass.ts passInput); else it has no task queued ready.
      line =
        hasReadyTask(job, pass.now) && !anyFreeSlot(pass)
          ? "the next pass does not start it: no host that takes work has a free slot"
          : "the next pass does not look at it: no task of it is queued ready to start";
    else {
      // The pass's own word (unplaced); else what its walk shows: the job's turn never came, the
      // room being gone before it (or there being none).
      let why = unplaced;
      if (why === null && reached) why = "the pass places none of its tasks";
      if (why === null)
        why = anyFreeSlot(pass)
          ? "the free room goes to work ahead of it"
          : "no host that takes work has a free slot";
      line = `the next pass does not start it: ${why}${noPreemption ? `; ${noPreemption}` : ""}`;
    }
  }
  return { starts, preempts, line };
}

/** Whether the job has a task ready to start now. */
function hasReadyTask(job: JobView, now: number): boolean {
  for (const _ of job.readyTasks(now)) return true;
  return false;
}

/** Whether a host that takes work (ready and connected) has a free slot. */
function anyFreeSlot(pass: SchedulerState): boolean {
  return pass.hosts.some((host) => host.state === "ready" && host.connected && host.slotsFree > 0);
}

/** Host by host: the first feasibility stage that rules the host out, else whether it has room. */
export function explainHosts(job: FeasibilityJob, hosts: readonly HostView[]): HostExplanation[] {
  return hosts.map((host) => assessHost(job, host, false).explanation);
}

/** `starts`: the dry run starts the job on this host. */
function assessHost(
  job: FeasibilityJob,
  host: HostView,
  starts: boolean,
): { explanation: HostExplanation; room: boolean } {
  for (const stage of FEASIBILITY_STAGES) {
    let reason = stage(job, host);
    if (reason === null) continue;
    // The stage itself only says the requirements fail (it runs on every pass); explain says which clause.
    if (stage === requirementsHold && job.requirements)
      reason = requirementsReason(job.requirements, host.facts) ?? reason;
    return { explanation: { host: host.name, eligible: false, reason }, room: false };
  }
  const shortfall = capacityShortfall(job, host);
  if (shortfall)
    return { explanation: { host: host.name, eligible: true, reason: `busy: ${shortfall}` }, room: false };
  return {
    explanation: {
      host: host.name,
      eligible: true,
      reason: starts ? "matches and has room: the job starts at the next pass" : "matches and has room",
    },
    room: true,
  };
}

/**
 * The requirements' failing clauses on this host: `requirements: host.memFreeMb >= 1e9 is false
 * (host.memFreeMb = 8000)`. A requirement of one clause that is false keeps the stage's own
 * sentence (the clause is the whole expression; the clause tally shows the values); one that
 * cannot be evaluated says why (a missing label). Null when no clause fails (the stage's reason stands).
 */
function requirementsReason(requirements: CompiledExpression, facts: HostFacts): string | null {
  const failing = failingClauses(requirements, facts);
  if (failing.length === 0) return null;
  if (requirementClauses(requirements).length === 1) {
    const [only] = failing;
    return "error" in only ? `requirements cannot be evaluated: ${only.error}` : null;
  }
  return `requirements: ${failing.map((outcome) => `${outcome.clause.source} ${whyClauseFails(outcome, facts)}`).join("; ")}`;
}

function tallyClauses(clauses: readonly Clause[], hosts: readonly HostView[]): ClauseTally[] {
  return clauses.map((clause) => {
    const failing: ClauseTally["failing"] = [];
    for (const host of hosts) {
      const outcome = evaluateClause(clause, host.facts);
      if (!outcome.holds) failing.push({ host: host.name, reason: whyClauseFails(outcome, host.facts) });
    }
    return { clause: clause.source, matching: hosts.length - failing.length, failing };
  });
}
