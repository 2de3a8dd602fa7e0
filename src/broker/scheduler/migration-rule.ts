// A migrating task's placement rule (TaskRecord.migration): where its next attempt may start, for
// how long the rule holds, and whether a migration away from a host has anywhere to go. A rule
// holds for MIGRATION_WAIT_SECONDS after the attempt it stopped has ended; then the task may start
// on any host, the one it left included, so that a task never waits for good for a host that is
// not there (the only other host removed, or a named host gone). Pure: the time comes in.

import type { MigrationIntent } from "../../common/model/records.ts";
import { type FeasibilityJob, infeasibility } from "./stages/feasibility.ts";
import { capacityShortfall, type Need } from "./stages/fit.ts";
import type { HostView } from "./view.ts";

/** How long a migrating task waits for the host its rule allows before any host may take it. */
export const MIGRATION_WAIT_SECONDS = 30;

/**
 * When the rule lapses: MIGRATION_WAIT_SECONDS after the stopped attempt ended; null while that
 * attempt has not ended (the task is not ready before then anyway).
 */
export function migrationLapsesAt(
  stoppedEndedAt: number | null,
  waitSeconds = MIGRATION_WAIT_SECONDS,
): number | null {
  return stoppedEndedAt === null ? null : stoppedEndedAt + waitSeconds * 1000;
}

/** Whether the rule lets the task start on `host` at `now`. */
export function migrationAllows(
  rule: MigrationIntent,
  lapsesAt: number | null,
  now: number,
  host: string,
): boolean {
  if (lapsesAt !== null && now >= lapsesAt) return true;
  return rule.to !== null ? host === rule.to : host !== rule.from;
}

/** The rule in words: `migrating away from local-1`, `migrating to local-2`. */
export function describeMigration(rule: MigrationIntent): string {
  return rule.to !== null ? `migrating to ${rule.to}` : `migrating away from ${rule.from}`;
}

/**
 * Why a pass places a migrating task nowhere while its rule holds (the scheduler's `unplaced`):
 * `task 0 is migrating away from local-1: no other host matches and has room; it may start on
 * local-1 again in 25 s`.
 */
export function migrationWaitReason(
  taskIndex: number,
  rule: MigrationIntent,
  lapsesAt: number | null,
  now: number,
): string {
  const where = rule.to !== null ? `${rule.to} has no room for it` : "no other host matches and has room";
  const lapse =
    lapsesAt === null
      ? ""
      : rule.to !== null
        ? `; it may start on any host in ${secondsLeft(lapsesAt, now)} s`
        : `; it may start on ${rule.from} again in ${secondsLeft(lapsesAt, now)} s`;
  return `task ${taskIndex} is ${describeMigration(rule)}: ${where}${lapse}`;
}

function secondsLeft(at: number, now: number): number {
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/** One host other than the one a task leaves, as a migration away from it sees it. */
export interface MigrationTarget {
  host: string;
  /** Null: it matches the job and has room for one task now; else why not. */
  refusal: string | null;
}

/** The hosts other than `from`, each with whether it matches the job and has room for one of its tasks now. */
export function migrationTargets(
  job: FeasibilityJob & Need,
  hosts: readonly HostView[],
  from: string,
): MigrationTarget[] {
  return hosts
    .filter((host) => host.name !== from)
    .map((host) => {
      const unfit = infeasibility(job, host);
      if (unfit !== null) return { host: host.name, refusal: unfit };
      const shortfall = capacityShortfall(job, host);
      return { host: host.name, refusal: shortfall === null ? null : `busy: ${shortfall}` };
    });
}

/**
 * Why a migration away from `from` (no host named) is refused up front, or null when another host
 * matches the job and has room: `no other host matches and has room (local-1 is the only host)`,
 * or with each other host's reason (the first three).
 */
export function migrationRefusal(targets: readonly MigrationTarget[], from: string): string | null {
  if (targets.some((target) => target.refusal === null)) return null;
  if (targets.length === 0) return `no other host matches and has room (${from} is the only host)`;
  const shown = targets.slice(0, 3).map((target) => `${target.host}: ${target.refusal}`);
  const more = targets.length > 3 ? `; ${targets.length - 3} more` : "";
  return `no other host matches and has room (${shown.join("; ")}${more})`;
}
