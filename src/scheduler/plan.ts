// The scheduling pass: reconcile -> feasibility -> fit -> score -> plan.
// Jobs are taken in queue order; each ready task goes to the best-scored feasible host that fits.
// A job whose next task fits nowhere does not block the jobs behind it (backfill).

import { hostFeasibility } from "./feasibility.ts";
import { type Capacity, fitsCapacity } from "./fit.ts";
import { compareScored, type ScoredHost, scoreHosts } from "./score.ts";
import type { Placement, Plan, SchedulerState } from "./view.ts";

export function schedule(state: SchedulerState): Plan {
  const placements: Placement[] = [];
  const capacity = new Map<string, Capacity>();
  let totalSlotsFree = 0;
  for (const host of state.hosts) {
    if (host.state !== "ready" || !host.connected) continue;
    capacity.set(host.name, { slotsFree: host.slotsFree, memoryFreeMb: host.memoryFreeMb });
    totalSlotsFree += Math.max(0, host.slotsFree);
  }
  if (totalSlotsFree <= 0) return { placements };

  for (const job of state.jobs) {
    if (totalSlotsFree <= 0) break;
    const feasible = state.hosts.filter((host) => capacity.has(host.name) && hostFeasibility(job, host).ok);
    if (feasible.length === 0) continue;
    const scored = scoreHosts(job, feasible);
    for (const taskIndex of job.readyTasks(state.now)) {
      const allowed = job.allowsHost ? (host: string) => job.allowsHost!(taskIndex, host) : null;
      const best = bestFit(scored, capacity, job, allowed);
      if (!best) {
        // A task bound to (or kept off) particular hosts does not stop its siblings.
        if (allowed) continue;
        break;
      }
      const room = capacity.get(best.host.name)!;
      room.slotsFree -= job.cpus;
      room.memoryFreeMb -= job.memoryMb;
      totalSlotsFree -= job.cpus;
      placements.push({ jobId: job.id, taskIndex, host: best.host.name });
      if (totalSlotsFree <= 0) break;
    }
  }
  return { placements };
}

function bestFit(
  scored: readonly ScoredHost[],
  capacity: ReadonlyMap<string, Capacity>,
  need: { cpus: number; memoryMb: number },
  allowed: ((host: string) => boolean) | null,
): ScoredHost | null {
  let best: ScoredHost | null = null;
  for (const candidate of scored) {
    if (allowed && !allowed(candidate.host.name)) continue;
    const room = capacity.get(candidate.host.name)!;
    if (!fitsCapacity(need, room)) continue;
    if (
      !best ||
      compareScored(candidate, best, room.slotsFree, capacity.get(best.host.name)!.slotsFree) < 0
    ) {
      best = candidate;
    }
  }
  return best;
}
