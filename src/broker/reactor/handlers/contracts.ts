// The contract monitor's side effects: each heartbeat's progress becomes samples of its attempts,
// and the attempts of jobs with a contract are judged (scheduler/contracts.ts) as their samples
// arrive. Judging at a sample rather than on a timer means an attempt is judged only on fresh
// numbers: a host that goes silent is the lease's business, not the contract's. A broken contract
// migrates the attempt (with its checkpoint, to any other host) and ranks its host last for the job;
// while no other host could run the job at all, the attempt stays (moving it would only leave the
// task waiting for a host that does not exist), and the job's events say so once.

import type { HeartbeatMessage } from "../../../common/protocol/messages.ts";
import { CONTRACT_RATE_WINDOW_SECONDS, judgeContract } from "../../scheduler/contracts.ts";
import { infeasibility } from "../../scheduler/stages/feasibility.ts";
import type { ClusterState } from "../../state/cluster-state.ts";
import { reportedAttempts } from "../../state/host-entry.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { applyStops } from "./apply-plan.ts";

export function watchContracts(
  step: Step,
  hostName: string,
  progress: HeartbeatMessage["progress"],
  windowSeconds = CONTRACT_RATE_WINDOW_SECONDS,
): void {
  const { state, now } = step;
  for (const { report, key, live } of reportedAttempts(state.hosts.get(hostName), progress)) {
    const { job, attempt } = live;
    const contract = job.record.spec.contract;
    if (!contract || attempt.state === "stopping") continue;
    step.onRollback(state.watches.restorer(key));
    const watch = state.watches.sample(key, { fraction: report.fraction, at: now }, windowSeconds * 1000);
    const verdict = judgeContract(
      {
        jobId: job.id,
        taskIndex: attempt.taskIndex,
        attempt: attempt.number,
        host: attempt.host,
        startedAt: attempt.startedAt,
        contract,
        samples: watch.samples,
        belowSince: watch.belowSince,
      },
      now,
      windowSeconds,
    );
    watch.belowSince = verdict.belowSince;
    if (!verdict.breach) continue;
    const { stop, numbers } = verdict.breach;
    const array = job.tasks.length > 1;
    if (!anotherHostCouldRun(state, job, attempt.host, now)) {
      if (!watch.stayedForLackOfHosts) {
        watch.stayedForLackOfHosts = true;
        step.event(job, { kind: "contract.stays", data: { ...numbers, array } });
      }
      continue;
    }
    if (!job.record.slowHosts.includes(attempt.host)) {
      step.write.updateJob(job, { slowHosts: [...job.record.slowHosts, attempt.host] });
    }
    applyStops(step, [stop]);
    step.event(job, { kind: "contract.broken", data: { ...numbers, array } });
  }
}

/** Whether a host other than `current` could run the job at all (free room or not). */
function anotherHostCouldRun(state: ClusterState, job: JobEntry, current: string, now: number): boolean {
  return state.hostViews(now).some((host) => host.name !== current && infeasibility(job, host) === null);
}
