import { describe, expect, it } from "vitest";
import { newHostEntry, onePlacement } from "../../../../src/broker/state/host-entry.ts";

function entry(name: string) {
  return newHostEntry(
    {
      name,
      pool: "default",
      state: "ready",
      slots: 4,
      labels: {},
      facts: {
        name,
        pool: "default",
        os: "linux",
        arch: "x64",
        cpus: 4,
        memoryMb: 1024,
        memFreeMb: 1024,
        load1: 0,
        cpuFree: 4,
        diskFreeMb: 1000,
        speed: 1,
        labels: {},
        slotsFree: 4,
      },
      lastSeen: 0,
      endsAt: null,
    },
    true,
  );
}

describe("onePlacement", () => {
  it("is one array per host, rank 0 on that host, shared by its attempts", () => {
    const a = entry("a");
    expect(onePlacement(a)).toStrictEqual([{ host: "a", rank: 0 }]);
    expect(onePlacement(a)).toBe(onePlacement(a));
    expect(onePlacement(entry("b"))).toStrictEqual([{ host: "b", rank: 0 }]);
  });

  it("cannot be changed through one attempt for the others", () => {
    const placement = onePlacement(entry("a"));
    expect(() => placement.push({ host: "b", rank: 1 })).toThrow(TypeError);
    expect(() => {
      placement[0].gpus = ["0"];
    }).toThrow(TypeError);
    expect(placement).toStrictEqual([{ host: "a", rank: 0 }]);
  });
});
