import { describe, expect, it } from "vitest";
import { type Capacity, type Need, takeRoom } from "../../../../../src/broker/scheduler/stages/fit.ts";
import { bestFitScan, FitQueue } from "../../../../../src/broker/scheduler/stages/fit-queue.ts";
import type { ScoredHost } from "../../../../../src/broker/scheduler/stages/rank.ts";
import type { HostView } from "../../../../../src/broker/scheduler/view.ts";

/** A small deterministic generator (the same cases every run). */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function scoredHost(name: string, rank: number, slow: boolean, held = 0): ScoredHost {
  return { host: { name } as HostView, rank, slow, held };
}

describe("FitQueue", () => {
  it("answers what a scan of every host answers, placement after placement, while rooms shrink", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const random = generator(seed);
      const count = 1 + Math.floor(random() * 60);
      const scored = Array.from({ length: count }, (_, i) =>
        scoredHost(`h${String(i).padStart(3, "0")}`, Math.floor(random() * 3), random() < 0.2),
      );
      const rooms: Capacity[] = scored.map(() => ({
        slotsFree: Math.floor(random() * 8),
        memoryFreeMb: Math.floor(random() * 4) * 1000,
      }));
      const need: Need = { cpus: 1 + Math.floor(random() * 2), memoryMb: 500 };
      const other: Need = { cpus: 1, memoryMb: 1000 };
      const queue = new FitQueue(scored, rooms, need);
      for (let step = 0; step < 400; step++) {
        // Other work of the pass takes room too (another batch sharing the hosts, a gang's reserve).
        if (random() < 0.3) {
          const i = Math.floor(random() * count);
          if (random() < 0.1) rooms[i].slotsFree = rooms[i].memoryFreeMb = 0;
          else if (rooms[i].slotsFree >= other.cpus && rooms[i].memoryFreeMb >= other.memoryMb)
            takeRoom(rooms[i], other);
        }
        const expected = bestFitScan(scored, rooms, need, null);
        expect(queue.best()).toBe(expected);
        if (expected < 0) break;
        takeRoom(rooms[expected], need);
      }
    }
  });

  it("answers what the scan answers with bytes of the job's inputs held on some hosts (data affinity)", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const random = generator(seed);
      const count = 1 + Math.floor(random() * 60);
      const scored = Array.from({ length: count }, (_, i) =>
        scoredHost(
          `h${String(i).padStart(3, "0")}`,
          Math.floor(random() * 2),
          random() < 0.1,
          random() < 0.4 ? Math.floor(random() * 3) * 1000 : 0,
        ),
      );
      const rooms: Capacity[] = scored.map(() => ({
        slotsFree: Math.floor(random() * 6),
        memoryFreeMb: 4000,
      }));
      const need: Need = { cpus: 1, memoryMb: 100 };
      const queue = new FitQueue(scored, rooms, need);
      for (let step = 0; step < 300; step++) {
        if (random() < 0.2) rooms[Math.floor(random() * count)].slotsFree = 0;
        const expected = bestFitScan(scored, rooms, need, null);
        expect(queue.best()).toBe(expected);
        if (expected < 0) break;
        takeRoom(rooms[expected], need);
      }
    }
  });

  it("fills the hosts holding more of the job's inputs first, then spreads over the others", () => {
    const scored = [
      scoredHost("a", 0, false),
      scoredHost("b", 0, false, 500),
      scoredHost("c", 0, false, 2000),
      scoredHost("d", 1, false),
    ];
    const rooms: Capacity[] = [
      { slotsFree: 2, memoryFreeMb: 100 },
      { slotsFree: 1, memoryFreeMb: 100 },
      { slotsFree: 2, memoryFreeMb: 100 },
      { slotsFree: 1, memoryFreeMb: 100 },
    ];
    const need: Need = { cpus: 1, memoryMb: 0 };
    const queue = new FitQueue(scored, rooms, need);
    const order: string[] = [];
    for (let best = queue.best(); best >= 0; best = queue.best()) {
      order.push(scored[best].host.name);
      takeRoom(rooms[best], need);
    }
    // d first (its rank is higher), then c (the most held) until full, b, then a holding none.
    expect(order.join("")).toBe("dccbaa");
  });

  it("spreads: the host with the most free slots first among equal ranks, then by name", () => {
    const scored = [scoredHost("a", 0, false), scoredHost("b", 0, false), scoredHost("c", 1, true)];
    const rooms: Capacity[] = [
      { slotsFree: 2, memoryFreeMb: 100 },
      { slotsFree: 3, memoryFreeMb: 100 },
      { slotsFree: 9, memoryFreeMb: 100 },
    ];
    const need: Need = { cpus: 1, memoryMb: 0 };
    const queue = new FitQueue(scored, rooms, need);
    const order: string[] = [];
    for (let best = queue.best(); best >= 0; best = queue.best()) {
      order.push(scored[best].host.name);
      takeRoom(rooms[best], need);
    }
    // b (3), then a and b at 2 each (a by name), ...; the slow host c only once the others are full.
    expect(order.join("")).toBe(`bab${"ab"}${"c".repeat(9)}`);
  });
});
