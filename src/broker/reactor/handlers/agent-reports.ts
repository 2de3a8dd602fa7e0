// What agents tell the server: hello (with the attempts they hold), heartbeats, and reports of
// attempts started and ended. Fencing is by attempt identity: a report of an attempt that is not
// live (ended, replaced, never known) changes nothing.

import type { AttemptUsage } from "../../../common/model/attempt-usage.ts";
import { rankOn, ranksOn } from "../../../common/model/gang.ts";
import { attemptKey, keyOf } from "../../../common/model/ids.ts";
import { outputPaths } from "../../../common/model/output-spec.ts";
import type { HostRecord } from "../../../common/model/records.ts";
import type { AttemptOutcome } from "../../../common/model/states.ts";
import type { StopReason } from "../../../common/model/stop-reasons.ts";
import type { EndedEvent, HelloMessage, StartedEvent } from "../../../common/protocol/messages.ts";
import type { ClusterState } from "../../state/cluster-state.ts";
import type { LiveAttempt } from "../../state/host-entry.ts";
import type { Step } from "../step.ts";
import { sendStop } from "./attempts.ts";
import { endOnHost, gangRankStarted } from "./gangs.ts";

export interface AttemptRef {
  jobId: string;
  taskIndex: number;
  attempt: number;
  /** A multi-node attempt's rank (absent: every rank of it on the host). */
  rank?: number;
}

/** An agent said hello. Returns the attempts it must kill (no longer live). */
export function attachHost(step: Step, message: HelloMessage): AttemptRef[] {
  const { state, now } = step;
  const known = state.hosts.get(message.name);
  const record: HostRecord = {
    name: message.name,
    pool: message.pool,
    state: message.leaving || known?.record.state === "draining" ? "draining" : "ready",
    slots: message.slots,
    labels: message.labels,
    facts: message.facts,
    lastSeen: now,
    endsAt: message.endsAt ?? null,
  };
  const host = step.write.attachHost(record);
  if (message.address) host.address = message.address;
  const kill: AttemptRef[] = [];
  const held = new Set<string>();
  const runningOnAgent = new Set<string>();
  /** A gang's ranks the agent holds (`key#rank`), and those it says run. */
  const heldRanks = new Set<string>();
  const runningRanks = new Set<string>();
  for (const ref of message.attempts) {
    const key = attemptKey(ref.jobId, ref.taskIndex, ref.attempt);
    const entry = host.active.get(key);
    const gang = entry?.gang;
    if (gang) {
      // A rank the gang has already counted as ended (its host was lost) is fenced: it is killed,
      // though the gang's other ranks may still be stopping.
      const ranks = ref.rank === undefined ? ranksOn(gang, message.name) : [ref.rank];
      const alive = ranks.filter((rank) => gang.ranks[rank]?.host === message.name && !gang.ranks[rank].end);
      if (alive.length === 0) {
        kill.push({ jobId: ref.jobId, taskIndex: ref.taskIndex, attempt: ref.attempt, rank: ref.rank });
        continue;
      }
      held.add(key);
      for (const rank of alive) {
        heldRanks.add(`${key}#${rank}`);
        if (ref.state === "running") runningRanks.add(`${key}#${rank}`);
      }
      continue;
    }
    if (ref.state === "running") runningOnAgent.add(key);
    if (entry) held.add(key);
    else kill.push({ jobId: ref.jobId, taskIndex: ref.taskIndex, attempt: ref.attempt, rank: ref.rank });
  }
  for (const [key, entry] of [...host.active]) {
    const { job, attempt, gang } = entry;
    if (gang) {
      for (const rank of ranksOn(gang, message.name)) {
        if (gang.ranks[rank].end) continue;
        if (heldRanks.has(`${key}#${rank}`)) {
          // Its "started" report may have been lost with the agent: the agent's word is enough.
          if (attempt.state === "starting" && runningRanks.has(`${key}#${rank}`))
            gangRankStarted(step, entry, message.name, undefined, rank);
          continue;
        }
        endOnHost(
          step,
          entry,
          message.name,
          { outcome: "lost", exitCode: null, reason: { kind: "agent-restarted" }, cause: "host" },
          rank,
        );
        if (attempt.state === "ended") break;
      }
      if (attempt.state === "stopping" && held.has(key)) sendStop(step, job, attempt);
      continue;
    }
    if (held.has(key)) {
      // Its "started" report may have been lost with the agent: the agent's word is enough.
      if (attempt.state === "starting" && runningOnAgent.has(key)) step.write.attemptRunning(attempt);
      // A stop the agent may not have had (it was away): the recorded intent goes again.
      if (attempt.state === "stopping") sendStop(step, job, attempt);
      continue;
    }
    // The agent does not know this attempt: it restarted without it (or the start was lost with it).
    endOnHost(step, entry, message.name, {
      outcome: "lost",
      exitCode: null,
      reason: { kind: "agent-restarted" },
      cause: "host",
    });
  }
  step.schedule = true;
  return kill;
}

/** The live attempt a report speaks of, if this host runs it. */
function reported(state: ClusterState, hostName: string, ref: AttemptRef): LiveAttempt | null {
  const live = state.liveAttempt(ref.jobId, ref.taskIndex, ref.attempt);
  if (!live) return null;
  const host = state.hosts.get(hostName);
  return host?.active.has(keyOf(live.attempt)) ? live : null;
}

export function attemptStarted(
  step: Step,
  hostName: string,
  ref: AttemptRef,
  coordinatorPort?: number,
): void {
  const live = reported(step.state, hostName, ref);
  if (live?.attempt.state !== "starting") return;
  if (live.gang) {
    gangRankStarted(step, live, hostName, coordinatorPort, ref.rank);
    return;
  }
  step.write.attemptRunning(live.attempt);
}

/** A start that could not be sent (the agent was not connected): a system failure, not the host's. */
export function startUndelivered(step: Step, hostName: string, ref: AttemptRef): void {
  const live = reported(step.state, hostName, ref);
  if (live?.attempt.state !== "starting") return;
  endOnHost(step, live, hostName, {
    outcome: "lost",
    exitCode: null,
    reason: { kind: "start-undelivered", host: hostName },
    cause: "undelivered",
  });
}

/** The usage an agent reported, as the attempt keeps it (its out-of-memory count is in the reason). */
function usageOf(reported: NonNullable<EndedEvent["usage"]>): AttemptUsage {
  return {
    userSeconds: reported.cpuUserSeconds,
    systemSeconds: reported.cpuSystemSeconds,
    peakMemoryMb: reported.peakMemoryMb,
    wallSeconds: reported.wallSeconds,
  };
}

/**
 * A host's started and ended reports, applied in their order in one step: what each would do
 * alone, each all or nothing (Step.allOrNothing), so that one that throws changes nothing and the others
 * stand. Returns each report's error (null when applied).
 */
export function attemptReports(
  step: Step,
  hostName: string,
  reports: readonly (StartedEvent | EndedEvent)[],
): unknown[] {
  return reports.map((report) =>
    step.allOrNothing(() => {
      if (report.kind === "started")
        attemptStarted(
          step,
          hostName,
          { jobId: report.jobId, taskIndex: report.taskIndex, attempt: report.attempt, rank: report.rank },
          report.coordinatorPort,
        );
      else attemptEnded(step, hostName, report);
    }),
  );
}

export function attemptEnded(step: Step, hostName: string, report: EndedEvent): void {
  const live = reported(step.state, hostName, report);
  if (!live) return;
  const { job } = live;
  let outcome: AttemptOutcome = report.outcome;
  let reason: StopReason | null = report.reason === null ? null : { kind: "text", text: report.reason };
  // Outputs come from rank 0 (or every rank, `outputsFrom: all`); another rank's success has none to check.
  const rank = live.gang ? (report.rank ?? rankOn(live.gang, hostName)) : 0;
  const all = live.gang !== undefined && job.record.spec.outputsFrom === "all";
  if (outcome === "succeeded" && (rank === 0 || all)) {
    // Those pushed to a URL too: the agent names each it pushed (rank 0's alone, never with `all`).
    const expected = outputPaths(job.record.spec.outputs).map((path) =>
      all ? `rank-${rank}/${path}` : path,
    );
    const missing = expected.filter((path) => !report.outputs.includes(path));
    if (missing.length) {
      outcome = "failed";
      reason = { kind: "outputs-missing", files: missing };
    }
  }
  const end = {
    outcome,
    exitCode: report.exitCode,
    reason,
    cause:
      outcome === "lost"
        ? (report.cause ?? "host")
        : outcome === "failed" && report.cause === "oom"
          ? ("oom" as const)
          : undefined,
    usage: report.usage ? usageOf(report.usage) : null,
  };
  endOnHost(step, live, hostName, end, live.gang ? rank : undefined);
}
