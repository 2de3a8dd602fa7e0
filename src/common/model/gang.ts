// A multi-node attempt (a gang) as its ranks report (GEMS: a parallel job restarted on a restart
// pool when a node dies). All ranks start together; the attempt runs once every rank has started.
// The first rank to end short of success fails the gang: the others are stopped, and the attempt
// ends once every rank has ended or is fenced (its host lost), with the failed rank named. Pure:
// the ranks' reports in, what to do out.

import { type AttemptUsage, sumUsage } from "./attempt-usage.ts";
import type { EndCause } from "./end-cause.ts";
import type { AttemptOutcome } from "./states.ts";
import type { StopReason } from "./stop-reasons.ts";

/** One rank's end as its agent reported it (or as the server decided for a lost host). */
export interface RankEnd {
  outcome: AttemptOutcome;
  exitCode: number | null;
  reason: StopReason | null;
  cause?: EndCause;
  /** What the rank used, as its agent measured it. */
  usage?: AttemptUsage | null;
}

export interface GangRank {
  host: string;
  started: boolean;
  end: RankEnd | null;
}

/** What the server keeps of a live gang attempt, in memory. */
export interface GangProgress {
  ranks: GangRank[];
  /** host:port of rank 0's coordinator, once rank 0's agent has said. */
  coordinator: string | null;
  /** The first rank that ended short of success, which fails the gang. */
  failed: { rank: number; host: string; end: RankEnd } | null;
}

export function newGangProgress(hosts: readonly string[]): GangProgress {
  return {
    ranks: hosts.map((host) => ({ host, started: false, end: null })),
    coordinator: null,
    failed: null,
  };
}

/** The (first) rank a host runs in this gang, or -1. */
export function rankOn(gang: GangProgress, host: string): number {
  return gang.ranks.findIndex((rank) => rank.host === host);
}

/** Every rank a host runs in this gang (several with `nodesPerHost`). */
export function ranksOn(gang: GangProgress, host: string): number[] {
  const ranks: number[] = [];
  gang.ranks.forEach((rank, index) => {
    if (rank.host === host) ranks.push(index);
  });
  return ranks;
}

export function allStarted(gang: GangProgress): boolean {
  return gang.ranks.every((rank) => rank.started);
}

/** What a rank's end means for the gang. */
export interface AfterRankEnd {
  /** The first failure: the other ranks must be stopped now. */
  stopOthers: boolean;
  /** Every rank has ended: the attempt ends with this. */
  attemptEnd: RankEnd | null;
}

/** Records a rank's end (a second report of the same rank changes nothing). */
export function rankEnded(gang: GangProgress, rank: number, end: RankEnd): AfterRankEnd {
  const entry = gang.ranks[rank];
  if (!entry || entry.end) return { stopOthers: false, attemptEnd: null };
  entry.end = end;
  let stopOthers = false;
  if (end.outcome !== "succeeded" && gang.failed === null) {
    gang.failed = { rank, host: entry.host, end };
    stopOthers = gang.ranks.some((other) => other.end === null);
  }
  return { stopOthers, attemptEnd: gang.ranks.every((each) => each.end) ? gangEnd(gang) : null };
}

/**
 * The attempt's end once every rank has ended. A rank whose host was lost comes first: the other
 * ranks fail soon after a peer dies (their connections break), often before the host's lease runs
 * out, and that is not the application's failure. Then the first rank that failed; else rank 0's
 * end (success, or the stop every rank was asked for). The rank is named in the reason.
 */
export function gangEnd(gang: GangProgress): RankEnd {
  // The attempt used what its ranks used together.
  const usage = sumUsage(gang.ranks.map((rank) => rank.end?.usage));
  const lost = gang.ranks.findIndex((rank) => rank.end?.outcome === "lost");
  const failed =
    lost >= 0 ? { rank: lost, host: gang.ranks[lost].host, end: gang.ranks[lost].end! } : gang.failed;
  if (failed) {
    const { rank, host, end } = failed;
    return {
      ...end,
      reason: { kind: "rank-ended", rank, host, outcome: end.outcome, reason: end.reason },
      usage,
    };
  }
  return { ...gang.ranks[0].end!, usage };
}

/** The ranks whose host was lost: they are replaced in the next attempt. */
export function lostRankHosts(gang: GangProgress): string[] {
  return gang.ranks.filter((rank) => rank.end?.outcome === "lost").map((rank) => rank.host);
}

/** Why the other ranks are stopped when one fails (their outcome follows the failure's kind). */
export function gangStopReason(failed: {
  rank: number;
  host: string;
  end: Pick<RankEnd, "outcome" | "exitCode">;
}): StopReason {
  return {
    kind: "gang-failed",
    rank: failed.rank,
    host: failed.host,
    outcome: failed.end.outcome,
    exitCode: failed.end.exitCode,
  };
}

/**
 * Where each rank of the next attempt should go: back to its host when that host is healthy, a
 * replacement (null) for a rank whose host was lost; the lost hosts are avoided.
 */
export function gangRestartPlan(
  hosts: readonly string[],
  healthy: (host: string) => boolean,
): { previous: (string | null)[]; avoid: string[] } {
  const previous = hosts.map((host) => (healthy(host) ? host : null));
  return { previous, avoid: hosts.filter((host) => !healthy(host)) };
}

/**
 * The restart plan of a gang whose attempt ended `lost`, from the attempt record and the hosts as
 * they are now (after a server restart): the ranks of hosts that are not healthy are replaced;
 * null when the attempt did not end lost.
 */
export function restartPlanOfEnded(
  attempt: { outcome: string | null; placement: readonly { host: string; rank: number }[] },
  healthy: (host: string) => boolean,
): { previous: (string | null)[]; avoid: string[] } | null {
  if (attempt.outcome !== "lost" || attempt.placement.length < 2) return null;
  return gangRestartPlan(
    attempt.placement.map((entry) => entry.host),
    healthy,
  );
}
