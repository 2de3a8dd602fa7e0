// Data affinity (OurGrid's MyGrid's storage affinity: a task goes to the machine that already holds
// the most bytes of its input): among the hosts that may run a job and have room now, the one whose
// content cache already holds more bytes of the job's inputs goes first. It is a term of the rank
// stage (stages/rank.ts), after the hosts the job broke its contract on (last) and the job's own
// `rank` (a user's explicit rank wins; data breaks its ties), before the most free slots and the
// name. The job's inputs are known by the digests of its uploaded inputs and its URL inputs'
// `sha256` (JobView.inputDigests); what each host holds comes from its agent's heartbeats
// (SchedulerState.cached), looked up digest by digest: a job without digests costs nothing, and a
// job with some costs a lookup per digest, not a walk of the hosts.
//
// It only orders hosts with room now (the fit stage asks the ranked hosts for the best one that
// fits): a free host that lacks the data takes the task rather than leave it waiting for a busy one
// that holds it. So the longest a matching free host stays idle for data affinity is
// DATA_AFFINITY_MAX_IDLE_SECONDS, 0.

import { isUrlInput, type JobInput } from "../../common/model/input-spec.ts";
import type { CachedObjects } from "./view.ts";

/**
 * The longest a host that matches a job and has room stays idle because another host holds the
 * job's inputs: none. The term orders hosts free in the same pass; it never holds a task back.
 */
export const DATA_AFFINITY_MAX_IDLE_SECONDS = 0;

/**
 * The digests known of a job's inputs, each once, in the inputs' order: an uploaded input's as the
 * server stored it (`uploaded`, by path; null for a job of an earlier version: none), a URL input's
 * `sha256` (lower case, as the agents' caches name it). A URL input without one is known by no digest.
 */
export function knownInputDigests(
  inputs: readonly JobInput[],
  uploaded: Readonly<Record<string, string>> | null,
): string[] {
  const digests = new Set<string>();
  for (const input of inputs) {
    const digest = isUrlInput(input)
      ? input.sha256?.toLowerCase()
      : uploaded && Object.hasOwn(uploaded, input)
        ? uploaded[input]
        : undefined;
    if (digest !== undefined) digests.add(digest);
  }
  return [...digests];
}

/**
 * The bytes of the job's inputs each host's cache holds (`digests`: each input's once), for the
 * hosts that hold any; null when no host holds any (or the job has no digest known): the term then
 * orders nothing, and the job's hosts are scored as any other's.
 */
export function inputBytesByHost(
  digests: readonly string[] | undefined,
  cached: CachedObjects | undefined,
): Map<string, number> | null {
  if (!digests || !cached) return null;
  let held: Map<string, number> | null = null;
  for (const digest of digests) {
    const holders = cached.get(digest);
    if (!holders) continue;
    held ??= new Map();
    for (const [host, bytes] of holders) held.set(host, (held.get(host) ?? 0) + bytes);
  }
  return held;
}

/** Jobs with the same digests (in the same order) score hosts alike in a pass: the part of their score key for it. */
export function dataAffinityKey(digests: readonly string[]): string {
  return digests.join(",");
}
