// How an attempt ended, as the agent reports it: stopped on request (the request's outcome and
// reason), lost (no exit code: its supervisor vanished), failed (a non-zero exit, by its memory
// limit when the kernel killed a process of it for that, else by a signal or its exit code), or,
// once its outputs are uploaded, succeeded (failed when an output is not the job's own; lost when
// the upload fails).

import { exitSignal } from "../../common/model/attempt-usage.ts";
import type { AgentOutcome } from "../../common/protocol/messages.ts";
import type { AttemptUsage } from "./measure-usage.ts";

export interface AttemptResult {
  outcome: AgentOutcome;
  exitCode: number | null;
  reason: string | null;
  outputs: string[];
  /** `staging` for a `lost` whose files could not be moved; `oom` for a `failed` killed by its memory limit. */
  cause?: "staging" | "oom";
  usage?: AttemptUsage;
}

/** How an attempt asked to stop ends: cancelled, preempted, migrated, lost or timed out. */
export type StopOutcome = "cancelled" | "preempted" | "migrated" | "lost" | "timed_out";

/** A stop asked of an attempt (kept in its folder's `stop` file). */
export interface StopRequest {
  outcome: StopOutcome;
  reason: string;
}

/** The reason of an attempt the kernel killed for its memory limit. */
export function outOfMemoryReason(memoryMb: number | undefined): string {
  return `out of memory: limit ${memoryMb ?? 0} MB reached`;
}

/**
 * How an attempt ended, decided without its outputs; null when it exited 0 unasked, and so ends by
 * its outputs (outcomeOfOutputs).
 */
export function outcomeWithoutOutputs(
  exitCode: number | null,
  stop: StopRequest | null,
  oomKills: number,
  memoryMb: number | undefined,
  reasonIfUnknown: string,
): AttemptResult | null {
  if (stop) return { outcome: stop.outcome, exitCode, reason: stop.reason, outputs: [] };
  if (exitCode === null) return { outcome: "lost", exitCode: null, reason: reasonIfUnknown, outputs: [] };
  // The kernel killed a process of the job for its memory limit: that, not the signal, is why.
  if (exitCode !== 0 && oomKills > 0)
    return { outcome: "failed", exitCode, reason: outOfMemoryReason(memoryMb), outputs: [], cause: "oom" };
  if (exitCode !== 0) {
    // 128+N from the supervisor's shell for signal N (1 to 31); a larger code is the job's own.
    const signal = exitSignal(exitCode);
    const reason = signal !== null ? `killed by signal ${signal}` : `exit code ${exitCode}`;
    return { outcome: "failed", exitCode, reason, outputs: [] };
  }
  return null;
}

/** How an attempt that exited 0 ends once its outputs are uploaded; `refused`: those not the job's own. */
export function outcomeOfOutputs(uploaded: string[], refused: string[]): AttemptResult {
  // Only the job could have put them there: its failure, like a missing output.
  if (refused.length)
    return {
      outcome: "failed",
      exitCode: 0,
      reason: `output file${refused.length > 1 ? "s" : ""} not the job's own, not taken: ${refused.join(", ")}`,
      outputs: uploaded,
    };
  return { outcome: "succeeded", exitCode: 0, reason: null, outputs: uploaded };
}

/** How an attempt that exited 0 ends when its outputs could not be uploaded: lost, to run again. */
export function outputsNotStaged(error: unknown): AttemptResult {
  const message = error instanceof Error ? error.message : String(error);
  return {
    outcome: "lost",
    exitCode: 0,
    reason: `staging outputs failed: ${message}`,
    outputs: [],
    cause: "staging",
  };
}
