// Score: order the feasible hosts of a job. Hosts where the job broke its performance contract
// come after all others (contracts.ts); then the job's rank expression (higher first, as in
// GridWay's rank); among equal ranks, the host whose cache holds more bytes of the job's inputs
// (data-affinity.ts), then the one with the most free slots (spread), then by name.

import { evaluateRank } from "../../../common/model/cel.ts";
import type { HostView, JobView } from "../view.ts";

export interface ScoredHost {
  host: HostView;
  rank: number;
  /** The job broke its performance contract on this host before. */
  slow: boolean;
  /** Bytes of the job's inputs the host's cache holds (data-affinity.ts); 0 when none (or none known). */
  held: number;
}

/** `held`: the bytes of the job's inputs each host holds (inputBytesByHost); null or absent: none. */
export function scoreHosts(
  job: Pick<JobView, "rank" | "slowHosts">,
  hosts: readonly HostView[],
  held?: ReadonlyMap<string, number> | null,
): ScoredHost[] {
  const slowHosts = job.slowHosts ?? [];
  return hosts.map((host) => ({
    host,
    rank: job.rank ? evaluateRank(job.rank, host.facts) : 0,
    slow: slowHosts.includes(host.name),
    held: held?.get(host.name) ?? 0,
  }));
}

export function compareScored(a: ScoredHost, b: ScoredHost, freeA: number, freeB: number): number {
  if (a.slow !== b.slow) return a.slow ? 1 : -1;
  if (a.rank !== b.rank) return b.rank > a.rank ? 1 : -1;
  if (a.held !== b.held) return b.held - a.held;
  return freeB - freeA || (a.host.name < b.host.name ? -1 : a.host.name > b.host.name ? 1 : 0);
}
