import { describe, expect, it } from "vitest";
import { lowerBoundSeconds, sliceOfTrace } from "../../bench/lcg-slice.ts";

describe("sliceOfTrace (bench: the LCG trace made into a replay of minutes)", () => {
  it.each([
    {
      name: "submit times from the slice's first job, divided by compress, in ms",
      trace: [
        { submitAt: 100, runSeconds: 10 },
        { submitAt: 140, runSeconds: 10 },
      ],
      options: { skip: 0, jobs: 2, compress: 20, runScale: 1, minRunSeconds: 0, maxRunSeconds: 100 },
      slice: [
        { index: 0, submitAtMs: 0, runSeconds: 10 },
        { index: 1, submitAtMs: 2000, runSeconds: 10 },
      ],
    },
    {
      name: "skip leaves the first jobs out; the slice's times start at its own first",
      trace: [
        { submitAt: 0, runSeconds: 5 },
        { submitAt: 50, runSeconds: 5 },
        { submitAt: 60, runSeconds: 5 },
      ],
      options: { skip: 1, jobs: 5, compress: 10, runScale: 1, minRunSeconds: 0, maxRunSeconds: 100 },
      slice: [
        { index: 0, submitAtMs: 0, runSeconds: 5 },
        { index: 1, submitAtMs: 1000, runSeconds: 5 },
      ],
    },
    {
      name: "run times divided by runScale, held between min and max, to the millisecond",
      trace: [
        { submitAt: 0, runSeconds: 3611 },
        { submitAt: 0, runSeconds: 2 },
        { submitAt: 0, runSeconds: 205 },
      ],
      options: { skip: 0, jobs: 3, compress: 1, runScale: 200, minRunSeconds: 0.2, maxRunSeconds: 15 },
      slice: [
        { index: 0, submitAtMs: 0, runSeconds: 15 },
        { index: 1, submitAtMs: 0, runSeconds: 0.2 },
        { index: 2, submitAtMs: 0, runSeconds: 1.025 },
      ],
    },
  ])("$name", ({ trace, options, slice }) => {
    expect(sliceOfTrace(trace, options)).toStrictEqual(slice);
  });

  it.each([
    { name: "compress 0", change: { compress: 0 }, message: /compress/ },
    { name: "runScale negative", change: { runScale: -1 }, message: /runScale/ },
    { name: "min above max", change: { minRunSeconds: 5, maxRunSeconds: 1 }, message: /minRunSeconds/ },
  ])("refuses $name", ({ change, message }) => {
    const options = {
      skip: 0,
      jobs: 1,
      compress: 1,
      runScale: 1,
      minRunSeconds: 0,
      maxRunSeconds: 1,
      ...change,
    };
    expect(() => sliceOfTrace([{ submitAt: 0, runSeconds: 1 }], options)).toThrow(message);
  });
});

describe("lowerBoundSeconds (the least a slice can take on its slots)", () => {
  it.each([
    {
      name: "the work over the slots",
      jobs: [
        { index: 0, submitAtMs: 0, runSeconds: 4 },
        { index: 1, submitAtMs: 0, runSeconds: 4 },
      ],
      slots: 1,
      bound: 8,
    },
    {
      name: "the longest job, when the slots are many",
      jobs: [
        { index: 0, submitAtMs: 0, runSeconds: 6 },
        { index: 1, submitAtMs: 0, runSeconds: 1 },
      ],
      slots: 8,
      bound: 6,
    },
    {
      name: "the last submit plus its run time, when jobs come late",
      jobs: [
        { index: 0, submitAtMs: 0, runSeconds: 1 },
        { index: 1, submitAtMs: 10_000, runSeconds: 2 },
      ],
      slots: 4,
      bound: 12,
    },
  ])("$name", ({ jobs, slots, bound }) => {
    expect(lowerBoundSeconds(jobs, slots)).toBe(bound);
  });
});
