// Fit: a pass's copy of a host's room (capacityOf) and what a placement takes from it (takeRoom).
// Whether a need fits (fitsCapacity, capacityShortfall) has its tables in
// test/unit/broker/scheduler/countable-resources.test.ts.

import { describe, expect, it } from "vitest";
import {
  type Capacity,
  capacityOf,
  type Need,
  takeRoom,
} from "../../../../../src/broker/scheduler/stages/fit.ts";

describe("takeRoom: a placement's need taken out of its host's room", () => {
  it.each<[string, Capacity, Need, Capacity]>([
    [
      "a need without GPUs or units leaves them as they were",
      { slotsFree: 2, memoryFreeMb: 100, gpusFree: 1, customFree: { licence: 1 } },
      { cpus: 1, memoryMb: 40 },
      { slotsFree: 1, memoryFreeMb: 60, gpusFree: 1, customFree: { licence: 1 } },
    ],
    [
      "GPUs and units taken",
      { slotsFree: 2, memoryFreeMb: 100, gpusFree: 2, customFree: { licence: 3, seat: 1 } },
      { cpus: 2, memoryMb: 100, gpus: 2, custom: { licence: 2 } },
      { slotsFree: 0, memoryFreeMb: 0, gpusFree: 0, customFree: { licence: 1, seat: 1 } },
    ],
    [
      "a host without GPUs stays without",
      { slotsFree: 1, memoryFreeMb: 0 },
      { cpus: 1, memoryMb: 0 },
      { slotsFree: 0, memoryFreeMb: 0 },
    ],
  ])("%s", (_, room, need, left) => {
    takeRoom(room, need);
    expect(room).toStrictEqual(left);
  });
});

describe("capacityOf: a pass's copy of a host's room", () => {
  it.each<[string, Capacity]>([
    [
      "a host with GPUs and units",
      { slotsFree: 2, memoryFreeMb: 100, gpusFree: 1, customFree: { licence: 1 } },
    ],
    ["a host without either: none declared", { slotsFree: 2, memoryFreeMb: 100 }],
  ])("%s: the same room, its units a copy of their own", (_, host) => {
    const copy = capacityOf(host);
    expect(copy).toEqual(host);
    expect(copy.gpusFree).toBe(host.gpusFree);
    expect(copy.customFree).toStrictEqual(host.customFree);
    if (copy.customFree) expect(copy.customFree).not.toBe(host.customFree);
  });
});
