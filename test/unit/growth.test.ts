import { describe, expect, it } from "vitest";
import { growthPerHour, lastOverFirstThird } from "../../bench/growth.ts";

describe("growthPerHour (bench: a soak's slope per hour)", () => {
  it.each([
    {
      name: "a line of 1 a second grows 3600 an hour",
      samples: [
        { atSeconds: 0, value: 10 },
        { atSeconds: 60, value: 70 },
        { atSeconds: 120, value: 130 },
      ],
      perHour: 3600,
    },
    {
      name: "flat: 0",
      samples: [
        { atSeconds: 0, value: 5 },
        { atSeconds: 30, value: 5 },
      ],
      perHour: 0,
    },
    {
      name: "least squares through noise: up 1, down 1 around a rise of 2 a minute",
      samples: [
        { atSeconds: 0, value: 1 },
        { atSeconds: 60, value: 1 },
        { atSeconds: 120, value: 5 },
        { atSeconds: 180, value: 5 },
      ],
      perHour: 96,
    },
    {
      name: "a shrinking figure grows negatively",
      samples: [
        { atSeconds: 0, value: 100 },
        { atSeconds: 3600, value: 40 },
      ],
      perHour: -60,
    },
    { name: "one sample: null", samples: [{ atSeconds: 0, value: 1 }], perHour: null },
    {
      name: "two samples at one time: null",
      samples: [
        { atSeconds: 5, value: 1 },
        { atSeconds: 5, value: 2 },
      ],
      perHour: null,
    },
  ])("$name", ({ samples, perHour }) => {
    const got = growthPerHour(samples);
    if (perHour === null) expect(got).toBeNull();
    else expect(got).toBeCloseTo(perHour, 9);
  });
});

describe("lastOverFirstThird", () => {
  it.each([
    { name: "flat: 1", values: [4, 4, 4, 4, 4, 4], ratio: 1 },
    { name: "doubled: 2", values: [2, 2, 3, 3, 4, 4], ratio: 2 },
    { name: "one spike in the middle does not count", values: [2, 2, 90, 90, 2, 2], ratio: 1 },
    { name: "the means of the thirds, not their largest", values: [1, 3, 0, 0, 4, 4], ratio: 2 },
    { name: "under three samples: null", values: [1, 2], ratio: null },
    { name: "a first third of zero: null", values: [0, 1, 2], ratio: null },
  ])("$name", ({ values, ratio }) => {
    expect(lastOverFirstThird(values.map((value, i) => ({ atSeconds: i, value })))).toBe(ratio);
  });
});
