// Explain for a running task: rescheduling's estimate (best gain first, how long ago) and
// preemption's word, in the sentence the CLI prints, and a gain as a percentage.

import { describe, expect, it } from "vitest";
import { explainRunningTask, formatGain } from "../../../../src/broker/scheduler/explain-running.ts";

const NOW = 1_000_000;

describe("explainRunningTask", () => {
  it.each([
    [{}, "no rescheduling estimate yet; not assessed for preemption yet"],
    [
      {
        estimates: [
          { host: "b", gain: 0.12 },
          { host: "c", gain: 0.45 },
        ],
        estimatedAt: NOW - 12_000,
      },
      "last rescheduling estimate 12 s ago: c +45 %, b +12 %; not assessed for preemption yet",
    ],
    [
      { estimates: [] },
      "last rescheduling estimate: no other host could take it; not assessed for preemption yet",
    ],
    [
      { preemption: { candidate: true, reason: "35 % progress since its start" } },
      "no rescheduling estimate yet; a preemption candidate: 35 % progress since its start",
    ],
    [
      { preemption: { candidate: false, reason: "ends within 300 s" } },
      "no rescheduling estimate yet; not a preemption candidate: ends within 300 s",
    ],
  ] as const)("%o", (given, line) => {
    const explained = explainRunningTask({ index: 3, attempt: 1, host: "a", ...given }, NOW);
    expect(explained.line).toBe(`task 3 (attempt 1) runs on a: ${line}`);
  });

  it("gives the best gain first, with the time of the estimate", () => {
    const explained = explainRunningTask(
      {
        index: 0,
        attempt: 1,
        host: "a",
        estimates: [
          { host: "b", gain: 0.1 },
          { host: "c", gain: 0.4 },
        ],
        estimatedAt: 0,
      },
      NOW,
    );
    expect(explained.estimates).toEqual([
      { host: "c", gain: 0.4 },
      { host: "b", gain: 0.1 },
    ]);
    expect(explained.estimatedAt).toBe("1970-01-01T00:00:00.000Z");
  });

  it.each([
    [0.3, "+30 %"],
    [0, "+0 %"],
    [-0.1, "-10 %"],
    [1.234, "+123 %"],
  ])("formats a gain of %d as %s", (gain, text) => {
    expect(formatGain(gain)).toBe(text);
  });
});
