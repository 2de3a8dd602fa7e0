// The performance contract rule (GrADS contract monitor, GridWay degradation trigger), by tables:
// the rate over the window, when an attempt is judged, and when it breaks its contract.

import { describe, expect, it } from "vitest";
import {
  CONTRACT_RATE_WINDOW_SECONDS,
  type ContractSubject,
  judgeContract,
  type ProgressSample,
  progressRate,
} from "../../../../src/broker/scheduler/contracts.ts";
import { AttemptWatches } from "../../../../src/broker/state/attempt-watches.ts";
import { renderStopReason } from "../../../../src/common/model/stop-reasons.ts";

const S = 1000;
const T0 = 1_000_000;

/** Samples every `every` seconds from T0 + start, with the fractions given. */
function samples(fractions: number[], every = 10, start = 0): ProgressSample[] {
  return fractions.map((fraction, i) => ({ fraction, at: T0 + (start + i * every) * S }));
}

function subject(overrides: Partial<ContractSubject> = {}): ContractSubject {
  return {
    jobId: "7",
    taskIndex: 0,
    attempt: 1,
    host: "h1",
    startedAt: T0,
    contract: { minProgressPerMinute: 0.05, graceSeconds: 60 },
    samples: [],
    belowSince: null,
    ...overrides,
  };
}

describe("progressRate", () => {
  it.each<[string, ProgressSample[], number | null]>([
    ["no sample", [], null],
    ["one sample", samples([0.2]), null],
    ["two samples at the same time", [samples([0.2])[0], samples([0.3])[0]], null],
    // Younger than the window: measured from the attempt's first sample.
    ["0.1 over 60 s", samples([0.1, 0.15, 0.2], 30), 0.1],
    ["0.01 over 10 s", samples([0.5, 0.51]), 0.06],
    ["no change", samples([0.3, 0.3, 0.3]), 0],
    ["going back", samples([0.3, 0.2]), -0.6],
    // Older than the window: measured from the newest sample at least 60 s older (at 10 s), so the
    // fast start (0 -> 0.5 in the first 10 s) no longer counts.
    ["the window drops a fast start", samples([0, 0.5, 0.51, 0.52, 0.53, 0.54, 0.55, 0.56]), 0.06],
  ])("%s", (_, given, perMinute) => {
    const rate = progressRate(given);
    if (perMinute === null) expect(rate).toBeNull();
    else expect(rate?.perMinute).toBeCloseTo(perMinute, 10);
  });

  it("uses the newest sample at least a window older as the reference", () => {
    const given = samples([0, 0.1, 0.2, 0.3, 0.4], 20); // at 0, 20, 40, 60, 80 s
    const rate = progressRate(given, 60);
    expect(rate?.from).toEqual(given[1]); // 80 - 60 = 20: the sample at 20 s
    expect(rate?.to).toEqual(given[4]);
    expect(rate?.perMinute).toBeCloseTo(0.3, 10);
  });

  it("the default window is 60 s", () => {
    expect(CONTRACT_RATE_WINDOW_SECONDS).toBe(60);
  });
});

describe("judgeContract", () => {
  // A contract of 0.05 per minute with 60 s of grace; samples every 10 s from the attempt's start.
  it.each<
    [
      string,
      Partial<ContractSubject>,
      number,
      { rate: number | null; belowSince: number | null; breach: boolean },
    ]
  >([
    [
      "rate above the contract: nothing",
      { samples: samples([0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16]) },
      T0 + 80 * S,
      { rate: 0.12, belowSince: null, breach: false },
    ],
    [
      "rate above clears an earlier fall below",
      { samples: samples([0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16]), belowSince: T0 + 40 * S },
      T0 + 80 * S,
      { rate: 0.12, belowSince: null, breach: false },
    ],
    [
      "first fall below: the clock starts now",
      { samples: samples([0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007]) },
      T0 + 70 * S,
      { rate: 0.006, belowSince: T0 + 70 * S, breach: false },
    ],
    [
      "below for less than the grace: nothing yet",
      {
        samples: samples([
          0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.01, 0.011, 0.012,
        ]),
        belowSince: T0 + 70 * S,
      },
      T0 + 120 * S,
      { rate: 0.006, belowSince: T0 + 70 * S, breach: false },
    ],
    [
      "below for the whole grace: broken",
      {
        samples: samples([
          0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.01, 0.011, 0.012, 0.013,
        ]),
        belowSince: T0 + 70 * S,
      },
      T0 + 130 * S,
      { rate: 0.006, belowSince: T0 + 70 * S, breach: true },
    ],
    [
      "no progress reported: not judged",
      { samples: [], belowSince: null },
      T0 + 600 * S,
      { rate: null, belowSince: null, breach: false },
    ],
    [
      "a single sample: not judged",
      { samples: samples([0.3], 10, 500) },
      T0 + 500 * S,
      { rate: null, belowSince: null, breach: false },
    ],
    [
      "finished (progress 1): not judged",
      { samples: samples([1, 1, 1, 1, 1, 1, 1, 1, 1, 1]), belowSince: T0 + 10 * S },
      T0 + 90 * S,
      { rate: null, belowSince: null, breach: false },
    ],
    [
      // Restarted from a checkpoint at 0.5: measured from where it resumed, not from zero (which
      // would read as a fast start) nor with the old attempt's samples.
      "restarted from a checkpoint: measured from where it resumed",
      { startedAt: T0 + 1000 * S, samples: samples([0.5, 0.501, 0.502, 0.503], 10, 1005) },
      T0 + 1035 * S,
      { rate: 0.006, belowSince: T0 + 1035 * S, breach: false },
    ],
    [
      // Even a fall below that began (by the tracking) before this attempt's grace was over does
      // not stop an attempt younger than graceSeconds.
      "just restarted: not stopped before its grace",
      { startedAt: T0 + 1000 * S, samples: samples([0.5, 0.5, 0.5], 10, 1005), belowSince: T0 + 900 * S },
      T0 + 1025 * S,
      { rate: 0, belowSince: T0 + 900 * S, breach: false },
    ],
    [
      // Exactly the contract's rate keeps it: 0.5 over 60 s.
      "exactly the contract's rate: kept",
      { contract: { minProgressPerMinute: 0.5, graceSeconds: 60 }, samples: samples([0, 0.5], 60) },
      T0 + 60 * S,
      { rate: 0.5, belowSince: null, breach: false },
    ],
    [
      // Below for long before, and the attempt exactly a grace old: its grace is over.
      "an attempt exactly a grace old, below for longer: broken",
      { startedAt: T0 + 1000 * S, samples: samples([0.5, 0.5, 0.5], 10, 1040), belowSince: T0 + 900 * S },
      T0 + 1060 * S,
      { rate: 0, belowSince: T0 + 900 * S, breach: true },
    ],
    [
      "a grace of 0: broken at the first rate below",
      { contract: { minProgressPerMinute: 0.05, graceSeconds: 0 }, samples: samples([0.2, 0.2]) },
      T0 + 10 * S,
      { rate: 0, belowSince: T0 + 10 * S, breach: true },
    ],
  ])("%s", (_, overrides, now, expected) => {
    const verdict = judgeContract(subject(overrides), now);
    if (expected.rate === null) expect(verdict.ratePerMinute).toBeNull();
    else expect(verdict.ratePerMinute).toBeCloseTo(expected.rate, 10);
    expect(verdict.belowSince).toBe(expected.belowSince);
    expect(verdict.breach !== null).toBe(expected.breach);
  });

  it("a broken contract migrates the attempt anywhere else, saying why with its numbers", () => {
    const given = samples([
      0, 0.0001, 0.0002, 0.0003, 0.0004, 0.0005, 0.0006, 0.0007, 0.0008, 0.0009, 0.001, 0.0011, 0.0012,
      0.0013,
    ]);
    const verdict = judgeContract(subject({ samples: given, belowSince: T0 + 70 * S }), T0 + 130 * S);
    expect(verdict.breach?.stop).toEqual({
      jobId: "7",
      taskIndex: 0,
      attempt: 1,
      intent: { outcome: "migrated", reason: expect.objectContaining({ kind: "contract-broken" }) },
      migrateTo: { to: null },
    });
    expect(renderStopReason(verdict.breach!.stop.intent.reason)).toBe(
      "contract: progress 0.001/min below 0.050/min for 60 s on h1",
    );
    expect(verdict.breach?.numbers).toMatchObject({
      task: 0,
      attempt: 1,
      host: "h1",
      minProgressPerMinute: 0.05,
      graceSeconds: 60,
      belowSince: T0 + 70 * S,
      belowSeconds: 60,
      windowSeconds: 60,
      measuredSeconds: 60,
    });
    expect(verdict.breach?.numbers.ratePerMinute).toBeCloseTo(0.0006, 10);
  });

  it("a job that slows down breaks its contract a grace after its windowed rate falls below", () => {
    // 0.1/min for 5 minutes, then stalled; judged at every 10 s sample as the server does.
    const watches = new AttemptWatches();
    const contract = { minProgressPerMinute: 0.04, graceSeconds: 60 };
    let brokenAt: number | null = null;
    let firstBelow: number | null = null;
    for (let second = 0; second <= 900 && brokenAt === null; second += 10) {
      const fraction = Math.min(second, 300) / 600;
      const now = T0 + second * S;
      const watch = watches.sample("7/0/1", { fraction, at: now }, 60 * S);
      const verdict = judgeContract(
        subject({ contract, samples: watch.samples, belowSince: watch.belowSince }),
        now,
      );
      watch.belowSince = verdict.belowSince;
      if (verdict.belowSince !== null) firstBelow ??= second;
      if (verdict.breach) brokenAt = second;
    }
    // Stalled at 300 s: the 60 s rate falls under 0.04/min once less than 24 s of the window
    // moved, at the sample of 340 s; the grace of 60 s ends at 400 s.
    expect(firstBelow).toBe(340);
    expect(brokenAt).toBe(400);
  });
});

describe("AttemptWatches.sample", () => {
  it("keeps the window and the reference sample before it, and no more", () => {
    const watches = new AttemptWatches();
    let kept: ProgressSample[] = [];
    for (let second = 0; second <= 200; second += 10) {
      kept = watches.sample("k", { fraction: second / 1000, at: T0 + second * S }, 60 * S).samples;
    }
    // Newest at 200 s: the window reaches back to 140 s, which is the reference.
    expect(kept.map((sample) => (sample.at - T0) / S)).toEqual([140, 150, 160, 170, 180, 190, 200]);
    expect(progressRate(kept)?.perMinute).toBeCloseTo(0.06, 10);
  });

  it("keeps the first sample while none is a window old", () => {
    const watches = new AttemptWatches();
    watches.sample("k", { fraction: 0.5, at: T0 }, 60 * S);
    const kept = watches.sample("k", { fraction: 0.6, at: T0 + 30 * S }, 60 * S).samples;
    expect(kept).toHaveLength(2);
    watches.forget("k");
    expect(watches.get("k")).toBeUndefined();
  });
});
