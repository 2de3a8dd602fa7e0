// Multi-node attempts (gangs) as their ranks report: rank 0 starts first and its agent finds the
// coordinator's port, then the other ranks start with it; the attempt runs once all have started.
// A rank that ends short of success stops the others, and the attempt ends once every rank has
// ended or is fenced (its host lost), naming the failed rank (model/gang.ts). The next attempt goes
// back to the healthy hosts and takes a replacement for a lost one (scheduler/stages/gang.ts).

import {
  allStarted,
  gangRestartPlan,
  gangStopReason,
  lostRankHosts,
  rankEnded,
  rankOn,
  ranksOn,
} from "../../../common/model/gang.ts";
import { hostsOf } from "../../../common/model/ids.ts";
import type { AttemptRecord, StopIntent } from "../../../common/model/records.ts";
import type { ServerMessage } from "../../../common/protocol/messages.ts";
import type { LiveAttempt } from "../../state/host-entry.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { Step } from "../step.ts";
import { type AttemptEnd, endAttempt, startMessage, stopAttempt } from "./attempts.ts";
import { withStartSecrets } from "./start-secrets.ts";

/** The start of one rank: rank 0's without a coordinator (its agent picks the port). */
export function rankStartMessage(
  step: Pick<Step, "state">,
  job: JobEntry,
  attempt: AttemptRecord,
  rank: number,
  coordinator: string | null,
): ServerMessage {
  const hosts = hostsOf(attempt);
  const nodes = hosts.map((host) => ({ host, address: step.state.hosts.get(host)?.address ?? host }));
  const { urlOutputs: _pushedByRank0, ...start } = withStartSecrets(
    startMessage(job, attempt, rank),
    job,
    step.state.secrets,
  );
  const all = job.record.spec.outputsFrom === "all";
  return {
    ...start,
    outputs: rank === 0 || all ? start.outputs : [],
    // Pushed once, by rank 0 (`outputsFrom: all` with URL outputs is refused at submit).
    ...(rank === 0 && _pushedByRank0 ? { urlOutputs: _pushedByRank0 } : {}),
    gang: { rank, nodes, coordinator, outputsUnder: all ? `rank-${rank}` : null },
  };
}

/** A rank's agent started it; rank 0's brings the coordinator's port, and the others start then. */
export function gangRankStarted(
  step: Step,
  live: LiveAttempt,
  hostName: string,
  coordinatorPort?: number,
  reportedRank?: number,
): void {
  const gang = live.gang!;
  const rank = reportedRank ?? rankOn(gang, hostName);
  if (rank < 0 || gang.ranks[rank]?.host !== hostName || gang.ranks[rank].started) return;
  keepForRollback(step, live);
  gang.ranks[rank].started = true;
  const { job, attempt } = live;
  if (rank === 0 && gang.coordinator === null) {
    const address = step.state.hosts.get(hostName)?.address ?? hostName;
    gang.coordinator = coordinatorPort ? `${address}:${coordinatorPort}` : null;
    if (attempt.state === "starting") {
      gang.ranks.forEach((each, other) => {
        if (other === 0) return;
        step.effect({
          kind: "send",
          host: each.host,
          message: rankStartMessage(step, job, attempt, other, gang.coordinator),
        });
      });
    }
  }
  if (attempt.state === "starting" && allStarted(gang)) step.write.attemptRunning(attempt);
}

/**
 * Ends what a host ran of a live attempt: the attempt itself, or, for a gang, the host's rank
 * (`rank`), or every rank of it on the host that has not ended (its host lost).
 */
export function endOnHost(
  step: Step,
  live: LiveAttempt,
  hostName: string,
  end: AttemptEnd,
  rank?: number,
): void {
  const { gang } = live;
  if (!gang) {
    endAttempt(step, live.job, live.attempt, end);
    return;
  }
  // One rank (its agent reported it), or every rank the host runs that has not ended (host lost).
  const ranks = rank === undefined ? ranksOn(gang, hostName) : [rank];
  for (const each of ranks) {
    if (gang.ranks[each]?.host !== hostName || gang.ranks[each].end) continue;
    endRank(step, live, each, end);
    if (live.attempt.state === "ended") return;
  }
}

/**
 * Notes how to put back a gang's progress (its ranks' starts and ends, its coordinator, its failed
 * rank) and its job's restart plan as they are now, should the step's handler throw (step.ts).
 */
function keepForRollback(step: Step, live: LiveAttempt): void {
  const gang = live.gang!;
  const { job } = live;
  const ranks = gang.ranks.map((rank) => ({ ...rank }));
  const { coordinator, failed } = gang;
  const { gangRestart } = job;
  step.onRollback(() => {
    gang.ranks.forEach((rank, index) => {
      Object.assign(rank, ranks[index]);
    });
    gang.coordinator = coordinator;
    gang.failed = failed;
    job.gangRestart = gangRestart;
  });
}

function endRank(step: Step, live: LiveAttempt, rank: number, end: AttemptEnd): void {
  const { job, attempt } = live;
  const gang = live.gang!;
  keepForRollback(step, live);
  const after = rankEnded(gang, rank, end);
  if (after.stopOthers && gang.failed) {
    const failed = gang.failed;
    // Stopped, not failed: the attempt's end names the rank that failed (model/gang.ts).
    const intent: StopIntent = { outcome: "cancelled", reason: gangStopReason(failed) };
    step.event(job, {
      kind: "gang.failed",
      data: {
        attempt: attempt.number,
        rank: failed.rank,
        host: failed.host,
        outcome: failed.end.outcome,
        exitCode: failed.end.exitCode,
      },
    });
    if (attempt.state === "stopping") {
      // Already asked to stop (cancel, hold): the other ranks were told; the failure is recorded.
    } else stopAttempt(step, job, attempt, intent);
  }
  if (after.attemptEnd) {
    // The ranks whose host was lost are replaced, with any host that is not ready now; the others go back.
    const lost = new Set(lostRankHosts(gang));
    const healthy = (host: string) => {
      const entry = step.state.hosts.get(host);
      return !lost.has(host) && entry !== undefined && entry.record.state === "ready" && entry.connected;
    };
    job.gangRestart = gangRestartPlan(hostsOf(attempt), healthy);
    endAttempt(step, job, attempt, after.attemptEnd);
  }
}
