// Gang placement (GEMS over DQ, the GrADS metascheduler): a multi-node job's attempt is N ranks on
// N hosts, and all N start together or none does. The scheduler places a gang only when N feasible
// hosts have room at once (one rank per host); it never holds a partial set, so two gangs cannot
// deadlock each other, and smaller work backfills the hosts a gang cannot use yet. A gang that has
// waited longer than the reserve time gets hosts reserved as they free up (Slurm's backfill
// reservation): work behind it in the queue may no longer take them, so it cannot starve. Hosts of
// the restart pool take no first placement of a gang: they stay free to replace a failed rank.
// Pure: the hosts, their room and the time in.

import type { GangNeeds, HostView } from "../view.ts";
import { type Capacity, capacityOf, fitsCapacity, takeRoom } from "./fit.ts";
import { compareScored, type ScoredHost } from "./rank.ts";

/** A gang waiting longer than this gets hosts reserved for it (`--gang-reserve-seconds`). */
export const GANG_RESERVE_SECONDS = 300;

/** Whether the host belongs to the pool kept for replacements. */
export function inRestartPool(host: HostView, restartPool: string | null): boolean {
  return restartPool !== null && host.facts.pool === restartPool;
}

/**
 * Hosts for every rank of the gang (rank order), or null when fewer than N have room now. A first
 * placement takes the best-ranked hosts outside the restart pool. A restart puts each rank back on
 * its previous host when that host still has room, and fills the ranks left over from the restart
 * pool first, then from any other host, never on a host to avoid.
 */
export function chooseGangHosts(
  gang: GangNeeds,
  scored: readonly ScoredHost[],
  capacity: ReadonlyMap<string, Capacity>,
): string[] | null {
  const perHost = gang.nodesPerHost ?? 1;
  // Room left on each host as ranks are given to it (a host may take up to nodesPerHost).
  const left = new Map<string, Capacity>();
  const roomOf = (name: string) => {
    let room = left.get(name);
    if (!room) {
      const free = capacity.get(name);
      if (!free) return undefined;
      room = capacityOf(free);
      left.set(name, room);
    }
    return room;
  };
  const counts = new Map<string, number>();
  const canTake = (name: string) => {
    const room = roomOf(name);
    return room !== undefined && (counts.get(name) ?? 0) < perHost && fitsCapacity(gang, room);
  };
  const take = (name: string) => {
    const room = roomOf(name)!;
    takeRoom(room, gang);
    counts.set(name, (counts.get(name) ?? 0) + 1);
  };
  const ordered = [...scored].sort((a, b) =>
    compareScored(a, b, capacity.get(a.host.name)?.slotsFree ?? 0, capacity.get(b.host.name)?.slotsFree ?? 0),
  );
  const ranks: (string | null)[] = Array.from({ length: gang.nodes }, () => null);
  if (gang.previous) {
    const feasible = new Set(scored.map((each) => each.host.name));
    gang.previous.forEach((host, rank) => {
      if (host !== null && rank < gang.nodes && feasible.has(host) && canTake(host)) {
        ranks[rank] = host;
        take(host);
      }
    });
  }
  const avoid = new Set(gang.avoid ?? []);
  const restarting = gang.previous !== undefined;
  // A replacement comes from the restart pool first; a first placement never does.
  const spares = ordered.filter((each) => inRestartPool(each.host, gang.restartPool));
  const others = ordered.filter((each) => !inRestartPool(each.host, gang.restartPool));
  const candidates = restarting ? [...spares, ...others] : others;
  // Each host in turn takes as many of the ranks left as it may (consecutive ranks share a host).
  let next = 0;
  for (let rank = 0; rank < gang.nodes; rank++) {
    if (ranks[rank] !== null) continue;
    while (next < candidates.length) {
      const name = candidates[next].host.name;
      if (!avoid.has(name) && canTake(name)) {
        ranks[rank] = name;
        take(name);
        break;
      }
      next++;
    }
    if (ranks[rank] === null) return null;
  }
  return ranks as string[];
}

/** Whether a gang ready since `readySince` has waited long enough to have hosts reserved. */
export function gangMayReserve(
  readySince: number,
  now: number,
  reserveSeconds = GANG_RESERVE_SECONDS,
): boolean {
  return now - readySince >= reserveSeconds * 1000;
}

/**
 * The hosts held for a gang that waits past its reserve time: the N feasible hosts outside the
 * restart pool that are closest to having room (most free slots, then best rank). Work behind the
 * gang may not take their room; they start the gang once all N are free. Empty when fewer than N
 * hosts could ever run it.
 */
export function reserveGangHosts(
  gang: GangNeeds,
  scored: readonly ScoredHost[],
  capacity: ReadonlyMap<string, Capacity>,
): string[] {
  const eligible = scored.filter((each) => !inRestartPool(each.host, gang.restartPool));
  const hosts = Math.ceil(gang.nodes / (gang.nodesPerHost ?? 1));
  if (eligible.length < hosts) return [];
  const free = (each: ScoredHost) => capacity.get(each.host.name)?.slotsFree ?? 0;
  return [...eligible]
    .sort((a, b) => compareScored(a, b, free(a), free(b)))
    .sort((a, b) => free(b) - free(a))
    .slice(0, hosts)
    .map((each) => each.host.name);
}

/** `needs 4 hosts, 3 match, 1 has room` (explain). */
export function gangShortfall(nodes: number, matching: number, withRoom: number): string {
  const hosts = (n: number) => `${n} host${n === 1 ? "" : "s"}`;
  const match = matching === 1 ? "matches" : "match";
  return `needs ${hosts(nodes)}, ${matching} ${match}, ${withRoom} ${withRoom === 1 ? "has" : "have"} room`;
}
