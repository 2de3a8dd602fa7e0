// "Why is this job not running?", host by host (HyperQueue's explain), through the same stages
// the scheduler uses; the requirements clause by clause (HTCondor's `condor_q -better-analyze`);
// how many hosts match and how many have room; whom the job waits behind in the queue; and, for
// its running tasks, what rescheduling and preemption last said. Pure: a snapshot and `now` in.

import {
  type Clause,
  evaluateClause,
  failingClauses,
  requirementClauses,
  whyClauseFails,
} from "../model/cel-clauses.ts";
import type { HostFacts } from "../model/records.ts";
import { batchKey } from "./batches.ts";
import {
  explainRunningTask,
  type RunningTaskAssessment,
  type RunningTaskExplanation,
} from "./explain-running.ts";
import type { OwnerShare } from "./fair-share.ts";
import { jobsAhead } from "./queue-position.ts";
import {
  FEASIBILITY_STAGES,
  type FeasibilityJob,
  infeasibility,
  requirementsHold,
} from "./stages/feasibility.ts";
import { capacityShortfall } from "./stages/fit.ts";
import type { HostView, JobView } from "./view.ts";

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
  /** The job's live attempts (with rescheduling's and preemption's last word once those land). */
  running?: readonly RunningTaskAssessment[];
}

export interface Explanation {
  hosts: HostExplanation[];
  summary: MatchSummary;
  clauses: ClauseTally[];
  /** Jobs with work now that get their turn first and want the hosts this job matches, in turn order. */
  ahead: { id: string; priority: number; owner: string | null }[];
  running: RunningTaskExplanation[];
}

export function explain(input: ExplainInput): Explanation {
  const { job, hosts, now } = input;
  const assessed = hosts.map((host) => assessHost(job, host));
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
  const ahead =
    queued && matchingHosts.length > 0 ? jobsAhead(job, input.queue, now, wantsSameHosts, input.owners) : [];
  return {
    hosts: assessed.map((each) => each.explanation),
    summary: {
      matching: matchingHosts.length,
      withRoom: assessed.filter((each) => each.explanation.eligible && each.room).length,
    },
    clauses: job.requirements ? tallyClauses(requirementClauses(job.requirements), hosts) : [],
    ahead: ahead.map((other) => ({ id: other.id, priority: other.priority, owner: other.owner ?? null })),
    running: (input.running ?? []).map((task) => explainRunningTask(task, now)),
  };
}

/** Host by host: the first feasibility stage that rules the host out, else whether it has room. */
export function explainJob(job: FeasibilityJob, hosts: readonly HostView[]): HostExplanation[] {
  return hosts.map((host) => assessHost(job, host).explanation);
}

function assessHost(job: FeasibilityJob, host: HostView): { explanation: HostExplanation; room: boolean } {
  for (const stage of FEASIBILITY_STAGES) {
    let reason = stage(job, host);
    if (reason === null) continue;
    // The stage itself only says the requirements fail (it runs on every pass); explain says which clause.
    if (stage === requirementsHold && job.requirements)
      reason = requirementsReason(job, host.facts) ?? reason;
    return { explanation: { host: host.name, eligible: false, reason }, room: false };
  }
  const shortfall = capacityShortfall(job, host);
  if (shortfall)
    return { explanation: { host: host.name, eligible: true, reason: `busy: ${shortfall}` }, room: false };
  return {
    explanation: {
      host: host.name,
      eligible: true,
      reason: "matches and has room: the job starts at the next pass",
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
function requirementsReason(job: FeasibilityJob, facts: HostFacts): string | null {
  if (!job.requirements) return null;
  const failing = failingClauses(job.requirements, facts);
  if (failing.length === 0) return null;
  if (requirementClauses(job.requirements).length === 1) {
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
