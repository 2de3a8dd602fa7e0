// Soft state: what the broker knows of its agents from moment to moment and never commits. It is
// changed only here, outside the reactor's steps, and decides nothing on its own (a lease runs out
// in the reactor's tick, a contract breaks in a handler): losing it all is what a restart does, and
// the rules below say how each piece comes back.
//
// - A host's lastSeen (its lease, HostEntry.lastSeen): renewed by every message of its agent. Not
//   committed: a write per heartbeat would be most of the store's traffic. A restart gives every
//   host a fresh lease (state/recover.ts), one host timeout to re-attach.
// - A host's facts from heartbeats (HostEntry.facts): hints that change all the time (free memory,
//   load), which the scheduler reads. The facts of the agent's hello are committed with the host;
//   later ones reach the store with the host's next committed change (its record takes the lease
//   and facts of the moment then, reactor/writes.ts), and the next heartbeat after a restart
//   brings them back. The host's record itself (HostEntry.record) is never changed here: it is
//   what the store has.
// - Whether a host's agent is attached (`connected`) and where it answers (`address`): properties
//   of a connection, which a restart does not keep; the agent's hello sets them again.
// - Progress samples of running attempts (JobEntry.progress, LiveAttempt.progress): what the
//   estimates and contracts read; the agents report them with every heartbeat.
// - A host's content cache counters (HostEntry.cache): what its agent's cache did since the agent
//   started, for /metrics; every heartbeat brings them anew.
// - What each host's content cache holds (ClusterState.cacheHolders), for the scheduler's data
//   affinity: the first heartbeat of each connection brings it, later ones when it changes; it is
//   forgotten when the agent detaches (and never held by a server that just started or took over),
//   so until an agent's next heartbeat its host counts as holding nothing.
// - The observed checkpoint transfer rate: an estimate the rescheduler prices moves with, learnt
//   again from the next uploads (the policy's default until then).

import type { HeldObject, HostCacheCounters, HostFacts } from "../../common/model/host-facts.ts";
import { observedTransferRate } from "../scheduler/transfer-rate.ts";
import type { ClusterState } from "./cluster-state.ts";
import { reportedAttempts } from "./host-entry.ts";

/** One attempt's progress as a heartbeat reports it (the fraction done, 0..1). */
export interface ProgressReport {
  jobId: string;
  taskIndex: number;
  attempt: number;
  fraction: number;
}

/** Any message from the agent renews its lease. */
export function agentSeen(state: ClusterState, now: number, name: string): void {
  const host = state.hosts.get(name);
  if (host) host.lastSeen = now;
}

/**
 * Heartbeats renew the lease and bring facts, progress and (from agents that have one) the cache's
 * counters, and what the cache holds when that changed (`held`: absent when it did not).
 */
export function heartbeatSeen(
  state: ClusterState,
  now: number,
  name: string,
  facts: HostFacts,
  progress: readonly ProgressReport[],
  cache?: HostCacheCounters,
  held?: readonly HeldObject[],
): void {
  const host = state.hosts.get(name);
  if (!host) return;
  host.lastSeen = now;
  host.facts = facts;
  if (cache) host.cache = cache;
  if (held) state.cacheHolders.set(name, held);
  for (const { report, live: active } of reportedAttempts(host, progress)) {
    const sample = { fraction: report.fraction, at: now };
    active.job.setProgress(report.taskIndex, sample);
    // A restarted attempt resumes where its checkpoint left off: its first report is its baseline.
    active.progress ??= { baseline: active.attempt.restarted ? sample : null, last: null };
    active.progress.last = sample;
  }
}

/** The agent's connection closed: the host keeps its lease until it runs out (or the agent comes back). */
export function agentDetached(state: ClusterState, name: string): void {
  const host = state.hosts.get(name);
  if (host) host.connected = false;
  // Its next connection's first heartbeat says again what its cache holds.
  state.cacheHolders.forget(name);
}

/** A checkpoint object of `bytes` took `ms` to arrive: the rescheduler prices moves with the observed rate. */
export function checkpointTransferObserved(state: ClusterState, bytes: number, ms: number): void {
  state.transferBytesPerSecond = observedTransferRate(state.transferBytesPerSecond, bytes, ms);
}
