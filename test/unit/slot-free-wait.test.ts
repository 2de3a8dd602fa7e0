import { describe, expect, it } from "vitest";
import { waitsWithSlotFree } from "../../bench/slot-free-wait.ts";

describe("waitsWithSlotFree (bench: scheduling latency with a slot free)", () => {
  it.each([
    {
      name: "a free slot all along: the whole wait counts",
      slots: 1,
      jobs: [{ createdAt: 0, startedAt: 5, endedAt: 10 }],
      waits: [5],
    },
    {
      name: "waiting for the only slot: only the time after it freed counts",
      slots: 1,
      jobs: [
        { createdAt: 0, startedAt: 0, endedAt: 100 },
        { createdAt: 10, startedAt: 103, endedAt: 150 },
      ],
      waits: [0, 3],
    },
    {
      name: "two waiting for one freed slot: the first in line has it, the second waits for the next",
      slots: 1,
      jobs: [
        { createdAt: 0, startedAt: 0, endedAt: 100 },
        { createdAt: 10, startedAt: 102, endedAt: 200 },
        { createdAt: 20, startedAt: 207, endedAt: null },
      ],
      waits: [0, 2, 7],
    },
    {
      name: "two slots, one busy: a new job has the other at once",
      slots: 2,
      jobs: [
        { createdAt: 0, startedAt: 1, endedAt: 1000 },
        { createdAt: 50, startedAt: 54, endedAt: 60 },
      ],
      waits: [1, 4],
    },
  ])("$name", ({ slots, jobs, waits }) => {
    expect(waitsWithSlotFree(jobs, slots)).toStrictEqual(waits);
  });
});
