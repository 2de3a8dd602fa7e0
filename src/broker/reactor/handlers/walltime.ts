// Pilots' walltimes (scheduler/walltime.ts): when a pilot's heartbeat finds it within the margin of
// its walltime, its live attempts migrate (checkpoint, stop, restart elsewhere), so the batch
// system kills none of them and none is charged to its task's retry budget.

import {
  type AttemptOnHost,
  pastWalltimeMargin,
  walltimeAt,
  walltimeStops,
} from "../../scheduler/walltime.ts";
import type { HostEntry } from "../../state/host-entry.ts";
import type { Step } from "../step.ts";
import { applyStops } from "./apply-plan.ts";

/** Whether the host is a pilot within its walltime margin with work still to move (cheap: every heartbeat asks). */
export function walltimeDue(
  step: Pick<Step, "state" | "now">,
  hostName: string,
  marginSeconds: number,
): boolean {
  const host = step.state.hosts.get(hostName);
  if (!host || host.record.endsAt === null) return false;
  if (!pastWalltimeMargin(walltimeAt(host.record.endsAt, step.now, marginSeconds))) return false;
  for (const { attempt } of host.active.values()) if (attempt.state !== "stopping") return true;
  return false;
}

/** Moves the live attempts off a pilot within its walltime margin. */
export function leaveBeforeWalltime(step: Step, hostName: string, marginSeconds: number): void {
  const host = step.state.hosts.get(hostName);
  if (!host || host.record.endsAt === null) return;
  const walltime = walltimeAt(host.record.endsAt, step.now, marginSeconds);
  const stops = walltimeStops(walltime, attemptsOn(host));
  const secondsLeft = Math.round(walltime?.secondsLeft ?? 0);
  for (const stop of stops) {
    const job = step.state.jobs.get(stop.jobId);
    const array = job !== undefined && job.tasks.length > 1;
    stop.note = {
      kind: "walltime.migrate",
      data: {
        task: stop.taskIndex,
        attempt: stop.attempt,
        host: hostName,
        secondsLeft,
        marginSeconds,
        array,
      },
    };
  }
  applyStops(step, stops);
}

function attemptsOn(host: HostEntry): AttemptOnHost[] {
  return [...host.active.values()].map(({ job, attempt }) => ({
    jobId: job.id,
    taskIndex: attempt.taskIndex,
    attempt: attempt.number,
    stopping: attempt.state === "stopping",
  }));
}
