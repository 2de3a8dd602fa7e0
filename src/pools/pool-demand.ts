// The work a pool could take now: cpus of ready tasks that a pilot of the pool could run (the
// job's requirements and size held against a pilot's facts) beyond the room its hosts have.

import type { PoolSpec } from "../model/pools-file.ts";
import { infeasibility } from "../scheduler/stages/feasibility.ts";
import type { HostView } from "../scheduler/view.ts";
import type { ClusterState } from "../state/cluster-state.ts";

/** A host as a new pilot of the pool will be: its pool, its slots, nothing known of its size. */
export function pilotProbe(pool: PoolSpec): HostView {
  const slots = pool.slotsPerPilot;
  const plenty = Number.MAX_SAFE_INTEGER;
  return {
    name: `${pool.name}-pilot`,
    state: "ready",
    connected: true,
    slots,
    slotsFree: slots,
    memoryFreeMb: plenty,
    facts: {
      name: `${pool.name}-pilot`,
      pool: pool.name,
      os: "linux",
      arch: "x86_64",
      cpus: slots,
      memoryMb: plenty,
      memFreeMb: plenty,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: plenty,
      speed: 1,
      labels: {},
      slotsFree: slots,
    },
  };
}

/** Cpus of ready work a pilot of `pool` could run, minus the free slots of the pool's hosts (at most `cap`). */
export function cpusWithoutRoom(state: ClusterState, pool: PoolSpec, now: number, cap: number): number {
  const probe = pilotProbe(pool);
  let cpus = 0;
  for (const job of state.queue.schedulable()) {
    if (cpus >= cap) break;
    if (infeasibility(job, probe) !== null) continue;
    for (const _ of job.readyTasks(now)) {
      cpus += job.cpus;
      if (cpus >= cap) break;
    }
  }
  let free = 0;
  for (const host of state.hosts.values()) {
    if (host.record.pool !== pool.name || host.record.state !== "ready" || !host.connected) continue;
    free += Math.max(0, host.record.slots - host.usedSlots);
  }
  return cpus - free;
}
