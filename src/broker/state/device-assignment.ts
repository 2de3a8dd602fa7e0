// Which GPUs an attempt gets: the server gives each rank specific device ids of its host when it
// places the attempt, recorded in the attempt's placement (PlacementEntry.gpus), so that they stay
// known across agent and server restarts and no two live attempts on a host share a device. Units
// of other countable resources are counted, not named.

import type { PlacementEntry } from "../../common/model/records.ts";

/**
 * The placement with `gpusPerRank` devices given to each rank, from the devices free on its host
 * (in the agent's order, lowest first), ranks sharing a host taking different ones; null when a
 * host has too few free.
 */
export function assignGpus(
  placement: readonly PlacementEntry[],
  gpusPerRank: number,
  freeOn: (host: string) => readonly string[],
): PlacementEntry[] | null {
  if (gpusPerRank <= 0) return placement.map((entry) => ({ ...entry }));
  const taken = new Map<string, number>();
  const assigned: PlacementEntry[] = [];
  for (const entry of placement) {
    const from = taken.get(entry.host) ?? 0;
    const free = freeOn(entry.host);
    if (free.length < from + gpusPerRank) return null;
    assigned.push({ ...entry, gpus: free.slice(from, from + gpusPerRank) });
    taken.set(entry.host, from + gpusPerRank);
  }
  return assigned;
}

/** Whether `count` ranks needing `custom` each fit in what a host has free (freeCustom). */
export function customFits(
  custom: Readonly<Record<string, number>> | undefined,
  count: number,
  free: Readonly<Record<string, number>>,
): boolean {
  for (const [name, units] of Object.entries(custom ?? {}))
    if ((free[name] ?? 0) < units * count) return false;
  return true;
}
