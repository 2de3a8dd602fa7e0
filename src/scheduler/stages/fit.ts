// Fit: does the host have the free capacity for one more task of this job right now?

export interface Capacity {
  slotsFree: number;
  memoryFreeMb: number;
}

export function fitsCapacity(need: { cpus: number; memoryMb: number }, capacity: Capacity): boolean {
  return capacity.slotsFree >= need.cpus && capacity.memoryFreeMb >= need.memoryMb;
}

export function capacityShortfall(
  need: { cpus: number; memoryMb: number },
  capacity: Capacity,
): string | null {
  if (capacity.slotsFree < need.cpus) return `needs ${need.cpus} free slots, ${capacity.slotsFree} free`;
  if (capacity.memoryFreeMb < need.memoryMb) {
    return `needs ${need.memoryMb} MB, ${capacity.memoryFreeMb} MB unreserved`;
  }
  return null;
}
