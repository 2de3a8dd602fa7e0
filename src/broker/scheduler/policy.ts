// The metascheduling settings, with the papers' values as defaults (server flags override them).

import { GANG_RESERVE_SECONDS } from "./stages/gang.ts";
import type { MetaschedulingPolicy } from "./view.ts";
import { WALLTIME_MARGIN_SECONDS } from "./walltime.ts";

/** GrADS Permission Service: wait for a running job that ends within 5 minutes rather than preempt. */
export const PREEMPT_WAIT_SECONDS = 300;
/** GrADS: a job is preemptible after 20 % progress since its start or its last preemption. */
export const PREEMPT_MIN_PROGRESS = 0.2;
/** GrADS Rescheduler: migrate only when the estimated gain passes 30 %. */
export const RESCHEDULE_GAIN = 0.3;
/** GridWay's discovering interval: how often running jobs are held against better hosts. */
export const DISCOVERY_SECONDS = 60;
/** A task with less than this fraction of its estimated time left is never moved (GrADS: near-finished jobs stay). */
export const MIN_REMAINING_FRACTION = 0.1;
/** Checkpoint transfer rate assumed until one has been observed (bytes per second). */
export const DEFAULT_TRANSFER_BYTES_PER_SECOND = 50_000_000;

export const DEFAULT_POLICY: MetaschedulingPolicy = {
  preempt: true,
  preemptWaitSeconds: PREEMPT_WAIT_SECONDS,
  preemptMinProgress: PREEMPT_MIN_PROGRESS,
  reschedule: true,
  rescheduleGain: RESCHEDULE_GAIN,
  discoverySeconds: DISCOVERY_SECONDS,
  minRemainingFraction: MIN_REMAINING_FRACTION,
  transferBytesPerSecond: DEFAULT_TRANSFER_BYTES_PER_SECOND,
  walltimeMarginSeconds: WALLTIME_MARGIN_SECONDS,
  gangReserveSeconds: GANG_RESERVE_SECONDS,
  restartPool: null,
};

export function policyOf(partial: Partial<MetaschedulingPolicy> | undefined): MetaschedulingPolicy {
  return { ...DEFAULT_POLICY, ...partial };
}
