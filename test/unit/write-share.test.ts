// The rule that sends the SQLite store's small commits to its writer thread while its writes take a
// large share of the time (write-share.ts), on a clock the test turns.

import { describe, expect, test } from "vitest";
import {
  COMMITS_HERE_MAX_WRITE_SHARE,
  WRITE_SHARE_WINDOW_MS,
  WriteShare,
} from "../../src/broker/store/write-share.ts";

describe("WriteShare", () => {
  test("the defaults: windows of 100 ms, small commits here while the writes take at most 60 %", () => {
    expect(WRITE_SHARE_WINDOW_MS).toBe(100);
    expect(COMMITS_HERE_MAX_WRITE_SHARE).toBe(0.6);
  });

  test.each([
    { writes: [], at: 100, here: true, why: "no write in the window" },
    { writes: [30], at: 100, here: true, why: "30 % of the window" },
    { writes: [60], at: 100, here: true, why: "60 %: at most, so still here" },
    { writes: [61], at: 100, here: false, why: "61 %" },
    { writes: [40, 30], at: 100, here: false, why: "two writes, 70 % together" },
    { writes: [80], at: 200, here: true, why: "80 ms over a window left 200 ms long: 40 %" },
    { writes: [90], at: 99, here: true, why: "the window not over: the last decision holds" },
    { writes: [-5, 10], at: 100, here: true, why: "a negative time counts as none" },
  ])("writes of $writes ms, asked at $at ms: here $here ($why)", ({ writes, at, here }) => {
    const share = new WriteShare(0);
    for (const ms of writes) share.wrote(ms);
    expect(share.commitsHere(at)).toBe(here);
  });

  test("a decision holds for the next window, then the writes of that window decide", () => {
    const share = new WriteShare(0);
    share.wrote(80);
    expect(share.commitsHere(100)).toBe(false);
    // Within the next window: the decision of the last one, whatever is written meanwhile.
    share.wrote(5);
    expect(share.commitsHere(150)).toBe(false);
    // That window over with 5 ms of writes: here again.
    expect(share.commitsHere(200)).toBe(true);
  });

  test("a window of no time decides on every commit: here until a write is counted", () => {
    const share = new WriteShare(0, { windowMs: 0, maxShare: 0 });
    expect(share.commitsHere(0)).toBe(true);
    share.wrote(0.2);
    expect(share.commitsHere(0.2)).toBe(false);
  });
});
