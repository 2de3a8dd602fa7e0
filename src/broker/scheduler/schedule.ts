// The scheduling pass, a pipeline of named stages (Nomad's iterator stack), each in stages/:
//   room kept by a preemption goes to its task first (job-placement.ts);
//   then the queue's turns (turns.ts: QoS bands, fair share between owners, queue order), and for
//   the job whose turn it is:
//     limit       (stages/limit.ts)       may it place more now (running limits, array throttle)?
//     feasibility (stages/feasibility.ts) which hosts that take work may run it at all;
//     rank        (stages/rank.ts)        those hosts scored, best first;
//     fit         (stages/fit.ts, job-placement.ts) its next task to the best one with room, a
//                 gang's ranks all at once (stages/gang.ts);
//   then slots still idle take replicas of running tasks (stages/replicas.ts);
//   then the stages that stop work: preempt (stages/preemption.ts), reschedule
//   (stages/rescheduling.ts).
// A job whose next task fits nowhere does not block the jobs behind it (backfill), and tasks alike
// for placement (a batch) are not tried again once one of them found no room (batches.ts). The
// hosts feasibility and rank give a job are worked out once for jobs alike (pass.ts). Explain runs
// the same pass dry with a trace (explain.ts), so what it says of a job is what this pass does.

import { cursorOf, type JobCursor, placeInKeptRoom, placeNext, rankFeasibleHosts } from "./job-placement.ts";
import { Pass } from "./pass.ts";
import { type Plan, taskKey } from "./plan.ts";
import { limit } from "./stages/limit.ts";
import { preempt } from "./stages/preemption.ts";
import { placeReplicas } from "./stages/replicas.ts";
import { reschedule } from "./stages/rescheduling.ts";
import { QueueTurns } from "./turns.ts";
import type { JobView, PassTrace, RunningTaskView, SchedulerState } from "./view.ts";

export function schedule(state: SchedulerState, trace: PassTrace = {}): Plan {
  const pass = new Pass(state, trace);
  // Room a preemption kept goes to its task first.
  placeInKeptRoom(pass);
  // The queue's turns while slots are free; for the job whose turn it is: limit, then feasibility
  // and rank, then fit.
  const turns = new QueueTurns<JobCursor>(state, pass.placedCpus, pass.limits.running, trace);
  while (pass.slotsFree > 0) {
    const lane = turns.next();
    if (lane === null) break;
    const job = lane.head;
    trace.turn?.(job);
    const limited = limit(job, pass.limits);
    if (limited !== null) {
      trace.unplaced?.(job, limited.reason);
      if (limited.limit === "running") turns.held();
      else turns.passed();
      continue;
    }
    lane.cursor ??= cursorOf(job);
    if (rankFeasibleHosts(pass, lane.cursor) && placeNext(pass, lane.cursor)) turns.placed(job);
    else turns.passed();
  }
  const { plan, capacity, policy } = pass;
  // Slots still idle may take replicas of running tasks (OurGrid), never a slot pending work could use.
  if (pass.slotsFree > 0) {
    const { now, jobs, hosts, replicable: running = [] } = state;
    const { placedJobs, limits } = pass;
    const placed = plan.place;
    plan.place.push(
      ...placeReplicas({ now, jobs, hosts, placed, placedJobs, capacity, running, quotas: limits.running }),
    );
  }
  // The stages that stop work: preempt, then reschedule into the room left.
  if (state.running) {
    const running = lazyRunning(state.running);
    if (policy.preempt) {
      const placed = new Set(plan.place.map((each) => taskKey(each.jobId, each.taskIndex)));
      const held = (job: JobView) => pass.limits.running.held(job);
      const decided = preempt(pass, running, placed, held);
      plan.preempt.push(...decided.preempt);
      plan.stop.push(...decided.stop);
      if (decided.recheckAt !== undefined) pass.recheckBy(decided.recheckAt);
    }
    if (policy.reschedule && pass.slotsFree > 0) plan.stop.push(...reschedule(pass, running()));
  }
  return plan;
}

/** The live attempts, built once and only when a stage asks. */
function lazyRunning(build: () => readonly RunningTaskView[]): () => readonly RunningTaskView[] {
  let running: readonly RunningTaskView[] | null = null;
  return () => {
    running ??= build();
    return running;
  };
}
