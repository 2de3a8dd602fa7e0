// One host as the server knows it: its durable record, whether its agent is attached now, and
// what its live attempts hold.

import type { GangProgress } from "../../common/model/gang.ts";
import type { HostCacheCounters, HostFacts } from "../../common/model/host-facts.ts";
import { attemptKey } from "../../common/model/ids.ts";
import type { AttemptRecord, HostRecord, PlacementEntry } from "../../common/model/records.ts";
import type { ProgressSample } from "../scheduler/estimate.ts";
import type { JobEntry } from "./job-entry.ts";

export interface LiveAttempt {
  job: JobEntry;
  attempt: AttemptRecord;
  /** What the attempt's job reported of its progress (scheduler/estimate.ts); kept in memory. */
  progress?: { baseline: ProgressSample | null; last: ProgressSample | null };
  /** Placed in room a preemption kept for its task (state/room-reservations.ts): not preempted in turn. */
  startedByPreemption?: boolean;
  /** A multi-node attempt: its ranks' starts and ends (model/gang.ts). */
  gang?: GangProgress;
}

export interface HostEntry {
  /** As the store has it: changed only through a step's writes (reactor/writes.ts). */
  record: HostRecord;
  /**
   * Soft state (state/soft-state.ts): when its agent was last heard from (its lease), and its facts
   * as its latest heartbeat gave them. The record takes both when it is next written.
   */
  lastSeen: number;
  facts: HostFacts;
  /** Soft state too: its agent's content cache counters, as its latest heartbeat gave them (/metrics). */
  cache?: HostCacheCounters;
  connected: boolean;
  usedSlots: number;
  usedMemoryMb: number;
  /** GPU device ids its live attempts hold (PlacementEntry.gpus). */
  usedGpus: Set<string>;
  /** Units of each countable resource its live attempts hold. */
  usedCustom: Map<string, number>;
  /** Live attempts on this host, by attempt key. */
  active: Map<string, LiveAttempt>;
  /** Where other hosts reach this one (its agent's hello), for multi-node jobs. */
  address: string;
  /** The placement its one-host attempts without GPUs share (onePlacement), made at the first. */
  onePlacement?: PlacementEntry[];
}

export function newHostEntry(record: HostRecord, connected: boolean): HostEntry {
  return {
    record,
    lastSeen: record.lastSeen,
    facts: record.facts,
    connected,
    usedSlots: 0,
    usedMemoryMb: 0,
    usedGpus: new Set(),
    usedCustom: new Map(),
    active: new Map(),
    address: "127.0.0.1",
  };
}

/**
 * The live attempts of the host that its agent's reports name (job, task, attempt), each with its
 * report and its attempt key, in the reports' order: a report of an attempt the host no longer
 * holds is passed over, and so are all of them for a host the state does not know (undefined).
 */
export function* reportedAttempts<Report extends { jobId: string; taskIndex: number; attempt: number }>(
  host: HostEntry | undefined,
  reports: Iterable<Report>,
): Generator<{ report: Report; key: string; live: LiveAttempt }> {
  if (!host) return;
  for (const report of reports) {
    const key = attemptKey(report.jobId, report.taskIndex, report.attempt);
    const live = host.active.get(key);
    if (live) yield { report, key, live };
  }
}

/**
 * The placement of a one-host attempt without GPUs on this host: one array for all of them (a
 * million-task array held a million copies of `[{ host, rank: 0 }]`, a tenth of its memory). It is
 * frozen: nothing changes a placement once made, and a change would throw, not reach other attempts.
 */
export function onePlacement(host: HostEntry): PlacementEntry[] {
  // The frozen array typed as the record's mutable one: see above.
  host.onePlacement ??= Object.freeze([
    Object.freeze({ host: host.record.name, rank: 0 }),
  ]) as PlacementEntry[];
  return host.onePlacement;
}

/** The host's record with its lease and facts as its agent last reported them (what is shown). */
export function hostRecordNow(host: HostEntry): HostRecord {
  return { ...host.record, lastSeen: host.lastSeen, facts: host.facts };
}

/** The GPU ids the host's agent declares that no live attempt holds, in the agent's order. */
export function freeGpus(host: HostEntry): string[] {
  return (host.facts.gpus ?? []).filter((id) => !host.usedGpus.has(id));
}

/** Units of each countable resource the host's agent declares that no live attempt holds. */
export function freeCustom(host: HostEntry): Record<string, number> {
  const free: Record<string, number> = {};
  for (const [name, units] of Object.entries(host.facts.resources ?? {}))
    free[name] = units - (host.usedCustom.get(name) ?? 0);
  return free;
}

/** Counts what one rank of a live attempt holds on the host in (+1) or out (-1). */
export function holdCountable(
  host: HostEntry,
  gpus: readonly string[] | undefined,
  custom: Readonly<Record<string, number>> | undefined,
  sign: 1 | -1,
): void {
  for (const id of gpus ?? []) {
    if (sign > 0) host.usedGpus.add(id);
    else host.usedGpus.delete(id);
  }
  for (const [name, units] of Object.entries(custom ?? {}))
    host.usedCustom.set(name, (host.usedCustom.get(name) ?? 0) + sign * units);
}
