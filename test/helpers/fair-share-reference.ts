// The fair-share rules written plainly, one attempt at a time: what OwnerUsage (src/broker/state/
// owner-usage.ts) computes from running sums, and the tree's factors over such records. The tests
// check the broker's figures against these.

import { decayedUsage } from "../../src/broker/scheduler/fair-share.ts";
import { factorsOf, runningUsage, shareTreeOf } from "../../src/broker/scheduler/fair-share-tree.ts";
import type { ShareTree } from "../../src/common/model/shares-file.ts";

/** What a user used, as OwnerUsage keeps it: cpu-seconds of ended attempts as of `at`, and the attempts running now. */
export interface UsageRecord {
  /** Decayed cpu-seconds of ended attempts as of `at` (ms). */
  cpuSeconds: number;
  at: number;
  running: Iterable<{ cpus: number; startedAt: number }>;
}

/** A user's usage at `now`: ended attempts decayed to now, plus what the running ones have accrued. */
export function usageAt(record: UsageRecord, now: number, halfLifeSeconds: number): number {
  let usage = decayedUsage(record.cpuSeconds, record.at, now, halfLifeSeconds);
  for (const attempt of record.running)
    usage += runningUsage(attempt.cpus, attempt.startedAt, now, halfLifeSeconds);
  return usage;
}

/**
 * Each user's fair-share factor at `now`: the tree's figures over the usage records (ended
 * attempts decayed with `halfLifeSeconds`, running ones accrued), for every user with a record
 * and every user the tree names.
 */
export function fairShareFactors(
  tree: ShareTree,
  usages: ReadonlyMap<string, UsageRecord>,
  now: number,
  halfLifeSeconds: number,
  groupOf?: (user: string) => string | undefined,
): Map<string, number> {
  const usage = new Map<string, number>();
  for (const [user, record] of usages) usage.set(user, usageAt(record, now, halfLifeSeconds));
  return factorsOf(shareTreeOf(tree, usage, groupOf));
}
