// The work the batch pools should start pilots for. Ready work is offered to the pools in the
// order the pools file lists them (the first is preferred): each task goes to the first pool that
// can run it and has room for it (free slots on its hosts, or slots its pending pilots will bring);
// failing that, to the first pool that may start pilots now. A pool that does not start pilots (its
// submissions fail, its pilots wait too long in the batch queue) takes no new work, so its work
// goes to the next pool (GridWay's suspension timeout, at the level of a pool).

import type { PoolSpec } from "../../common/model/pools-file.ts";
import { AGENT_TRANSFERS } from "../../common/model/transfers.ts";
import type { RunningQuotas } from "../scheduler/qos.ts";
import { infeasibility } from "../scheduler/stages/feasibility.ts";
import { throttleRoom } from "../scheduler/stages/throttle.ts";
import type { HostView, JobView } from "../scheduler/view.ts";
import { pastWalltimeMargin, walltimeAt } from "../scheduler/walltime.ts";
import type { ClusterState } from "../state/cluster-state.ts";

/** A host as a new pilot of the pool will be: its pool, its slots, its whole walltime ahead. */
export function pilotProbe(pool: PoolSpec, marginSeconds: number): HostView {
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
      // A pilot runs this release's agent, sharing the pool's folders.
      transfers: [...AGENT_TRANSFERS],
      shared: [...pool.shared],
      secondsLeft: pool.walltime,
    },
    walltime: { secondsLeft: pool.walltime, marginSeconds },
  };
}

/** A pool as the work is offered to it. */
export interface PoolOffer {
  name: string;
  /** What a new pilot of the pool looks like, to hold jobs against. */
  probe: HostView;
  /** Cpus free now on its hosts, plus those its pending pilots will bring. */
  roomCpus: number;
  /** Cpus new pilots may still bring now (0 while the pool starts none: back-off, stalled, at maxPilots). */
  headroomCpus: number;
}

/** What a pool's new pilots are wanted for. */
export interface PoolDemand {
  /** Cpus of ready work that only new pilots of this pool will run. */
  cpus: number;
  /** The shortest maxQueueWaitSeconds among the jobs of that work, or null when none says one. */
  maxQueueWaitSeconds: number | null;
}

export type OfferedJob = JobView & { maxQueueWaitSeconds?: number | null };

/** Offers the jobs' ready tasks to the pools in order; the new-pilot demand of each pool by name. */
export function offerWork(
  jobs: Iterable<OfferedJob>,
  pools: readonly PoolOffer[],
  now: number,
  /** The running limits of the QoS tiers and groups: work they hold back asks for no pilot. */
  quotas?: Pick<RunningQuotas, "held" | "add">,
): Map<string, PoolDemand> {
  const demand = new Map<string, PoolDemand>(
    pools.map((pool) => [pool.name, { cpus: 0, maxQueueWaitSeconds: null }]),
  );
  const room = pools.map((pool) => pool.roomCpus);
  const headroom = pools.map((pool) => pool.headroomCpus);
  let capacity = room.reduce((a, b) => a + b, 0) + headroom.reduce((a, b) => a + b, 0);
  for (const job of jobs) {
    if (capacity <= 0) break;
    const feasible = pools.map((pool) => infeasibility(job, pool.probe) === null);
    if (!feasible.some(Boolean)) continue;
    // A gang's ranks each need a host of their own: a whole pilot apiece.
    const ranks = job.gang?.nodes ?? 1;
    const cpusIn = (i: number) => (ranks > 1 ? ranks * Math.max(job.cpus, pools[i].probe.slots) : job.cpus);
    for (const _ of tasksForNewPilots(job, now)) {
      if (capacity <= 0 || quotas?.held(job)) break;
      let taken = pools.findIndex((_pool, i) => feasible[i] && room[i] >= cpusIn(i));
      if (taken >= 0) {
        room[taken] -= cpusIn(taken);
      } else {
        taken = pools.findIndex((_pool, i) => feasible[i] && headroom[i] >= cpusIn(i));
        if (taken < 0) break;
        headroom[taken] -= cpusIn(taken);
        const wanted = demand.get(pools[taken].name)!;
        wanted.cpus += cpusIn(taken);
        const wait = job.maxQueueWaitSeconds ?? null;
        if (wait !== null)
          wanted.maxQueueWaitSeconds = Math.min(wanted.maxQueueWaitSeconds ?? Number.POSITIVE_INFINITY, wait);
      }
      quotas?.add(job);
      capacity -= cpusIn(taken);
    }
  }
  return demand;
}

/** A name no host has: a pilot not yet started. */
const NEW_PILOT = "\u0000new pilot";

/**
 * The job's ready tasks, and those that wait to move (a migration) and may go to a new pilot; no
 * more than an array's throttle lets start now (stages/throttle.ts).
 */
function* tasksForNewPilots(job: OfferedJob, now: number): Iterable<number> {
  let left = throttleRoom(job);
  for (const index of job.readyTasks(now)) {
    if (left-- <= 0) return;
    yield index;
  }
  if (!job.constrainedTasks) return;
  for (const task of job.constrainedTasks(now)) {
    if (!task.allows(NEW_PILOT)) continue;
    if (left-- <= 0) return;
    yield task.index;
  }
}

/** Free cpus of a pool's hosts that can take work now (ready, connected, not near their walltime). */
export function freeCpusOf(
  state: Pick<ClusterState, "hosts">,
  pool: string,
  now: number,
  marginSeconds: number,
): number {
  let free = 0;
  for (const host of state.hosts.values()) {
    if (host.record.pool !== pool || host.record.state !== "ready" || !host.connected) continue;
    if (pastWalltimeMargin(walltimeAt(host.record.endsAt, now, marginSeconds))) continue;
    free += Math.max(0, host.record.slots - host.usedSlots);
  }
  return free;
}
