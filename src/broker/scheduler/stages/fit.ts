// Fit: does the host have the free capacity for one more task of this job right now? Slots and
// memory, and the countable resources an agent declares (GPUs, `--resource name=N`), counted alike.

export interface Capacity {
  slotsFree: number;
  memoryFreeMb: number;
  /** GPUs not held by a live attempt; absent: the host has none. */
  gpusFree?: number;
  /** Each declared countable resource's units not held by a live attempt; a name absent: none. */
  customFree?: Record<string, number>;
}

/** What one task (or one rank) takes of a host. */
export interface Need {
  cpus: number;
  memoryMb: number;
  /** GPUs (absent: none). */
  gpus?: number;
  /** Units of countable resources by name (absent: none). */
  custom?: Readonly<Record<string, number>>;
}

/**
 * Whether the need fits: the same rule as capacityShortfall without the sentence, which a pass
 * would otherwise write for every host that does not fit (rescheduling asks for each running task
 * and each host with room).
 */
export function fitsCapacity(need: Need, capacity: Capacity): boolean {
  if (capacity.slotsFree < need.cpus || capacity.memoryFreeMb < need.memoryMb) return false;
  const gpus = need.gpus ?? 0;
  if (gpus > 0 && (capacity.gpusFree ?? 0) < gpus) return false;
  if (need.custom) {
    for (const name in need.custom) {
      const units = need.custom[name];
      if (units > 0 && (capacity.customFree?.[name] ?? 0) < units) return false;
    }
  }
  return true;
}

export function capacityShortfall(need: Need, capacity: Capacity): string | null {
  if (capacity.slotsFree < need.cpus) return `needs ${need.cpus} free slots, ${capacity.slotsFree} free`;
  if (capacity.memoryFreeMb < need.memoryMb) {
    return `needs ${need.memoryMb} MB, ${capacity.memoryFreeMb} MB unreserved`;
  }
  const gpus = need.gpus ?? 0;
  if (gpus > 0 && (capacity.gpusFree ?? 0) < gpus) {
    return `needs ${gpus} ${gpus === 1 ? "gpu" : "gpus"}, host has ${capacity.gpusFree ?? 0} free`;
  }
  if (need.custom) {
    for (const [name, units] of Object.entries(need.custom)) {
      const free = capacity.customFree?.[name] ?? 0;
      if (units > 0 && free < units) return `needs ${units} ${name}, host has ${free} free`;
    }
  }
  return null;
}

/** Takes a task's need out of a host's room (a placement in this pass). */
export function takeRoom(room: Capacity, need: Need): void {
  room.slotsFree -= need.cpus;
  room.memoryFreeMb -= need.memoryMb;
  if (need.gpus) room.gpusFree = (room.gpusFree ?? 0) - need.gpus;
  if (need.custom) {
    const free = { ...room.customFree };
    for (const [name, units] of Object.entries(need.custom)) free[name] = (free[name] ?? 0) - units;
    room.customFree = free;
  }
}

/** A copy of a host's room, for a pass to take from. */
export function capacityOf(host: Capacity): Capacity {
  // One shape for every host (absent fields undefined, not missing): a pass copies every host's
  // room, and spreads of optional fields made it the pass's most allocating step.
  return {
    slotsFree: host.slotsFree,
    memoryFreeMb: host.memoryFreeMb,
    gpusFree: host.gpusFree,
    customFree: host.customFree === undefined ? undefined : { ...host.customFree },
  };
}
