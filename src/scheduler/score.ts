// Score: order the feasible hosts of a job. The job's rank expression first (higher first, as in
// GridWay's rank); among equal ranks, the host with the most free slots (spread), then by name.

import { evaluateRank } from "../model/cel.ts";
import type { HostView, JobView } from "./view.ts";

export interface ScoredHost {
  host: HostView;
  rank: number;
}

export function scoreHosts(job: Pick<JobView, "rank">, hosts: readonly HostView[]): ScoredHost[] {
  return hosts.map((host) => ({ host, rank: job.rank ? evaluateRank(job.rank, host.facts) : 0 }));
}

export function compareScored(a: ScoredHost, b: ScoredHost, freeA: number, freeB: number): number {
  if (a.rank !== b.rank) return b.rank > a.rank ? 1 : -1;
  return freeB - freeA || (a.host.name < b.host.name ? -1 : a.host.name > b.host.name ? 1 : 0);
}
