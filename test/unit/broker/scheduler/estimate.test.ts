// The rate of progress a running attempt reports, and the time it still needs from it: when it can
// be measured at all (enough progress, over some time).

import { describe, expect, it } from "vitest";
import {
  type AttemptProgress,
  MIN_MEASURED_PROGRESS,
  progressRate,
} from "../../../../src/broker/scheduler/estimate.ts";

describe("progressRate", () => {
  it.each<[string, () => AttemptProgress, number | null]>([
    ["no report yet", () => ({ startedAt: 0, baseline: null, last: null }), null],
    [
      "exactly the least progress measured, over 10 s",
      () => ({ startedAt: 0, baseline: null, last: { fraction: MIN_MEASURED_PROGRESS, at: 10_000 } }),
      MIN_MEASURED_PROGRESS / 10,
    ],
    [
      "less than the least progress measured",
      () => ({ startedAt: 0, baseline: null, last: { fraction: MIN_MEASURED_PROGRESS / 2, at: 10_000 } }),
      null,
    ],
    [
      "progress reported at the very start: no time to measure over",
      () => ({ startedAt: 5000, baseline: null, last: { fraction: 0.5, at: 5000 } }),
      null,
    ],
    [
      "from a checkpoint's first report: 0.2 more over 20 s",
      () => ({ startedAt: 0, baseline: { fraction: 0.5, at: 10_000 }, last: { fraction: 0.7, at: 30_000 } }),
      0.01,
    ],
  ])("%s", (_, progress, expected) => {
    const rate = progressRate(progress());
    if (expected === null) expect(rate).toBeNull();
    else expect(rate).toBeCloseTo(expected, 12);
  });
});
