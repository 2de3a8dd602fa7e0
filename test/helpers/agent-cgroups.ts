// The cgroups an agent made on this machine (src/agent/cgroups/enforcement.ts), removed once a test has
// killed or stopped it: an agent killed with kill -9, like a host that lost power, leaves its
// (empty) cgroups behind, and the tests start hundreds of agents on a machine that keeps them.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  openEnforcement,
  readLayout,
  removeBase,
  sweepCgroups,
} from "../../src/agent/cgroups/enforcement.ts";

/** Removes the cgroups of the agent of that name and work folder (its attempts' first, killing what is left). */
export async function removeAgentCgroups(name: string, workDir: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const found = readLayout();
  if ("unavailable" in found) return;
  const chosen = openEnforcement(name, workDir, found.layout, true);
  if ("unavailable" in chosen) return;
  await sweepCgroups(chosen.enforcement, new Set());
  removeBase(chosen.enforcement);
}

/** Why an agent here could not enforce resource limits (not root, no controllers), or null; the probe leaves nothing. */
export function enforcementUnavailable(): string | null {
  if (process.getuid?.() !== 0) return "cgroups need root";
  const found = readLayout();
  if ("unavailable" in found) return found.unavailable;
  const probe = mkdtempSync(join(tmpdir(), "steward-probe-"));
  try {
    const chosen = openEnforcement("probe", probe, found.layout);
    if ("unavailable" in chosen) return chosen.unavailable;
    removeBase(chosen.enforcement);
    return null;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/**
 * Skips the test, saying why, when limits cannot be enforced here (`unavailable`, from
 * enforcementUnavailable); under CI it fails instead. `what` says what the test needs.
 */
export function skipUnlessEnforced(
  context: { skip: (note: string) => void },
  unavailable: string | null,
  what = "resource limits cannot be enforced here",
): void {
  if (!unavailable) return;
  if (process.env.CI) throw new Error(`${what}: ${unavailable}`);
  context.skip(`${what}: ${unavailable}`);
}
