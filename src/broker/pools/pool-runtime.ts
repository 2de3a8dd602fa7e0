// What the pool manager keeps of one pool between its rounds: its pilots as last listed, its
// failures and stalls in the batch queue, and what it cancelled.

import type { PoolSpec } from "../../common/model/pools-file.ts";
import type { BatchDriver, PilotOwner, PilotStatus } from "../drivers/driver.ts";
import { type PilotAccount, poolPilotDir } from "./pilot-account.ts";
import { type PilotCounts, POOL_FAILURES_UNAVAILABLE } from "./pilot-demand.ts";
import { pilotJobName } from "./pool-token.ts";

export interface PoolRuntime {
  spec: PoolSpec;
  driver: BatchDriver;
  /** Its pilots' job name and account. */
  owner: PilotOwner;
  account: PilotAccount;
  /** Its pilots' folder: the token file, their logs and work folders. */
  dir: string;
  /** Jobs of its pilots' name and account it did not submit, already logged (logged once each). */
  ignored: Set<string>;
  pilots: PilotStatus[];
  /** Failed submissions (and pilots that ended before their agent joined) in a row. */
  failures: number;
  reason: string | null;
  nextSubmitAt: number;
  /** Times in a row its pilots waited too long in the batch queue; no new work until stalledUntil. */
  stalls: number;
  stalledUntil: number;
  stallReason: string | null;
  /** Pending pilots: since when (ms), and how long they may wait in the queue (s). */
  waits: Map<string, { since: number; limitSeconds: number }>;
  /** Pilots this server cancelled: their leaving the queue is no failure to start. */
  cancelled: Set<string>;
}

/** What a pool's runtime is made from besides its spec and account (of the pool manager's options). */
export interface PoolRuntimeSource {
  drivers: Record<string, BatchDriver>;
  /** The server's join token: each pool's pilots carry a token derived from it (pools/pool-token.ts). */
  joinToken: string;
  /** Where pilots of pools run as the broker's own account write their logs and work folders. */
  pilotDir: string;
}

/** A pool as it starts: no pilot listed yet, no failure, no stall. */
export function newPoolRuntime(
  spec: PoolSpec,
  account: PilotAccount,
  options: PoolRuntimeSource,
): PoolRuntime {
  return {
    spec,
    driver: options.drivers[spec.driver],
    owner: {
      jobName: pilotJobName(options.joinToken, spec.name),
      account: account.name,
      runAs: account.runAs,
    },
    account,
    dir: poolPilotDir(spec, account, options.pilotDir),
    ignored: new Set(),
    pilots: [],
    failures: 0,
    reason: null,
    nextSubmitAt: 0,
    stalls: 0,
    stalledUntil: 0,
    stallReason: null,
    waits: new Map(),
    cancelled: new Set(),
  };
}

/** Why the pool is unavailable now (failed submissions, pilots stuck in the queue), or null. */
export function poolUnavailable(pool: PoolRuntime, now: number): string | null {
  if (pool.failures >= POOL_FAILURES_UNAVAILABLE) return pool.reason;
  if (now < pool.stalledUntil) return pool.stallReason;
  return null;
}

/** How many of the pilots are pending, running and ending. */
export function pilotCounts(pilots: readonly PilotStatus[]): PilotCounts {
  const counts: PilotCounts = { pending: 0, running: 0, ending: 0 };
  for (const pilot of pilots) counts[pilot.state]++;
  return counts;
}
