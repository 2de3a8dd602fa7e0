// One host as the server knows it: its durable record, whether its agent is attached now, and
// what its live attempts hold.

import type { GangProgress } from "../model/gang.ts";
import type { AttemptRecord, HostRecord } from "../model/records.ts";
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
  record: HostRecord;
  connected: boolean;
  usedSlots: number;
  usedMemoryMb: number;
  /** Live attempts on this host, by attempt key. */
  active: Map<string, LiveAttempt>;
  /** Where other hosts reach this one (its agent's hello), for multi-node jobs. */
  address: string;
}

export function newHostEntry(record: HostRecord, connected: boolean): HostEntry {
  return { record, connected, usedSlots: 0, usedMemoryMb: 0, active: new Map(), address: "127.0.0.1" };
}
