// A gang's progress as its ranks report: which ranks a host runs, when every rank has started, what
// a rank's end means (the first failure stops the others; the last end ends the attempt, named
// after a lost rank first, then the first failure, else rank 0), and where the next attempt's
// ranks go when hosts were lost.

import { describe, expect, it } from "vitest";
import type { AttemptUsage } from "../../../../src/common/model/attempt-usage.ts";
import {
  type AfterRankEnd,
  allStarted,
  gangEnd,
  gangRestartPlan,
  gangStopReason,
  lostRankHosts,
  newGangProgress,
  type RankEnd,
  rankEnded,
  rankOn,
  ranksOn,
  restartPlanOfEnded,
} from "../../../../src/common/model/gang.ts";

function usage(wallSeconds: number, userSeconds: number, peakMemoryMb: number): AttemptUsage {
  return { wallSeconds, userSeconds, systemSeconds: 1, peakMemoryMb };
}

describe("a new gang", () => {
  it("has its ranks on their hosts, none started or ended, no coordinator and no failure", () => {
    expect(newGangProgress(["a", "b", "a"])).toEqual({
      ranks: [
        { host: "a", started: false, end: null },
        { host: "b", started: false, end: null },
        { host: "a", started: false, end: null },
      ],
      coordinator: null,
      failed: null,
    });
  });
});

describe("the ranks of a host", () => {
  it.each<[string, number, number[]]>([
    ["a", 0, [0, 2]],
    ["b", 1, [1]],
    ["c", -1, []],
  ])("%s: first %i, all %j", (host, first, all) => {
    const gang = newGangProgress(["a", "b", "a"]);
    expect(rankOn(gang, host)).toBe(first);
    expect(ranksOn(gang, host)).toEqual(all);
  });
});

describe("allStarted", () => {
  it.each<[string, boolean[], boolean]>([
    ["none started", [false, false], false],
    ["one of two", [true, false], false],
    ["the other of two", [false, true], false],
    ["both", [true, true], true],
  ])("%s: %j", (_, started, all) => {
    const gang = newGangProgress(["a", "b"]);
    started.forEach((value, rank) => {
      gang.ranks[rank].started = value;
    });
    expect(allStarted(gang)).toBe(all);
  });
});

describe("rankEnded", () => {
  const ok = (wall: number): RankEnd => ({
    outcome: "succeeded",
    exitCode: 0,
    reason: null,
    usage: usage(wall, wall, 100),
  });
  const bad = (exitCode: number): RankEnd => ({
    outcome: "failed",
    exitCode,
    reason: null,
    usage: usage(5, 5, 200),
  });
  const lost: RankEnd = {
    outcome: "lost",
    exitCode: null,
    reason: { kind: "host-silent", host: "b", seconds: 30 },
  };

  it.each<[string, string[], [number, RankEnd][], AfterRankEnd[]]>([
    [
      "every rank succeeds: the attempt ends with rank 0's end and the ranks' usage summed",
      ["a", "b"],
      [
        [1, ok(20)],
        [0, ok(10)],
      ],
      [
        { stopOthers: false, attemptEnd: null },
        {
          stopOthers: false,
          attemptEnd: {
            ...ok(10),
            usage: { wallSeconds: 20, userSeconds: 30, systemSeconds: 2, peakMemoryMb: 200 },
          },
        },
      ],
    ],
    [
      "the first failure stops the others, and names the attempt's end",
      ["a", "b", "c"],
      [
        [1, bad(3)],
        [2, bad(4)],
        [0, ok(10)],
      ],
      [
        { stopOthers: true, attemptEnd: null },
        { stopOthers: false, attemptEnd: null },
        {
          stopOthers: false,
          attemptEnd: {
            ...bad(3),
            reason: { kind: "rank-ended", rank: 1, host: "b", outcome: "failed", reason: null },
            usage: { wallSeconds: 10, userSeconds: 20, systemSeconds: 3, peakMemoryMb: 500 },
          },
        },
      ],
    ],
    [
      "a failure of the last rank stops none",
      ["a", "b"],
      [
        [0, ok(10)],
        [1, bad(3)],
      ],
      [
        { stopOthers: false, attemptEnd: null },
        {
          stopOthers: false,
          attemptEnd: {
            ...bad(3),
            reason: { kind: "rank-ended", rank: 1, host: "b", outcome: "failed", reason: null },
            usage: { wallSeconds: 10, userSeconds: 15, systemSeconds: 2, peakMemoryMb: 300 },
          },
        },
      ],
    ],
    [
      "a lost rank names the end before the first failure, and a rank without usage makes it none",
      ["a", "b"],
      [
        [0, bad(1)],
        [1, lost],
      ],
      [
        { stopOthers: true, attemptEnd: null },
        {
          stopOthers: false,
          attemptEnd: {
            ...lost,
            reason: {
              kind: "rank-ended",
              rank: 1,
              host: "b",
              outcome: "lost",
              reason: { kind: "host-silent", host: "b", seconds: 30 },
            },
            usage: null,
          },
        },
      ],
    ],
    [
      "a second report of a rank, and a rank the gang does not have, change nothing",
      ["a", "b"],
      [
        [0, ok(10)],
        [0, bad(9)],
        [2, bad(9)],
        [-1, bad(9)],
        [1, ok(20)],
      ],
      [
        { stopOthers: false, attemptEnd: null },
        { stopOthers: false, attemptEnd: null },
        { stopOthers: false, attemptEnd: null },
        { stopOthers: false, attemptEnd: null },
        {
          stopOthers: false,
          attemptEnd: {
            ...ok(10),
            usage: { wallSeconds: 20, userSeconds: 30, systemSeconds: 2, peakMemoryMb: 200 },
          },
        },
      ],
    ],
  ])("%s", (_, hosts, ends, after) => {
    const gang = newGangProgress(hosts);
    expect(ends.map(([rank, end]) => rankEnded(gang, rank, end))).toEqual(after);
  });

  it("keeps the first failure, and each rank's own end", () => {
    const gang = newGangProgress(["a", "b", "c"]);
    const first: RankEnd = { outcome: "failed", exitCode: 3, reason: null };
    const second: RankEnd = { outcome: "cancelled", exitCode: null, reason: null };
    rankEnded(gang, 2, first);
    rankEnded(gang, 0, second);
    rankEnded(gang, 2, second);
    expect(gang.failed).toEqual({ rank: 2, host: "c", end: first });
    expect(gang.ranks.map((rank) => rank.end)).toEqual([second, null, first]);
  });
});

describe("gangEnd", () => {
  it.each<[string, RankEnd[], RankEnd]>([
    [
      "rank 0's end when none failed",
      [
        { outcome: "cancelled", exitCode: null, reason: { kind: "text", text: "stop" } },
        { outcome: "cancelled", exitCode: 143, reason: null },
      ],
      { outcome: "cancelled", exitCode: null, reason: { kind: "text", text: "stop" }, usage: null },
    ],
    [
      "a lost rank 0 names it",
      [
        { outcome: "lost", exitCode: null, reason: null },
        { outcome: "lost", exitCode: null, reason: null },
      ],
      {
        outcome: "lost",
        exitCode: null,
        reason: { kind: "rank-ended", rank: 0, host: "a", outcome: "lost", reason: null },
        usage: null,
      },
    ],
  ])("%s", (_, ends, end) => {
    const gang = newGangProgress(["a", "b"]);
    ends.forEach((each, rank) => {
      gang.ranks[rank].end = each;
    });
    expect(gangEnd(gang)).toEqual(end);
  });
});

describe("the ranks of lost hosts", () => {
  it("are those that ended lost, by host", () => {
    const gang = newGangProgress(["a", "b", "c", "d"]);
    gang.ranks[1].end = { outcome: "lost", exitCode: null, reason: null };
    gang.ranks[2].end = { outcome: "failed", exitCode: 1, reason: null };
    gang.ranks[3].end = { outcome: "lost", exitCode: null, reason: null };
    expect(lostRankHosts(gang)).toEqual(["b", "d"]);
  });
});

describe("gangStopReason", () => {
  it("names the rank, its host, its outcome and its exit code", () => {
    expect(gangStopReason({ rank: 2, host: "c", end: { outcome: "failed", exitCode: 7 } })).toEqual({
      kind: "gang-failed",
      rank: 2,
      host: "c",
      outcome: "failed",
      exitCode: 7,
    });
  });
});

describe("the restart plan", () => {
  it("sends each rank back to its host when healthy, and replaces and avoids the others", () => {
    const healthy = (host: string) => host !== "b";
    expect(gangRestartPlan(["a", "b", "c", "b"], healthy)).toEqual({
      previous: ["a", null, "c", null],
      avoid: ["b", "b"],
    });
  });

  it.each<[string, string | null, number, boolean]>([
    ["a gang that ended lost", "lost", 2, true],
    ["one that ended otherwise", "failed", 2, false],
    ["one not ended", null, 2, false],
    ["one of a single host", "lost", 1, false],
    ["one of three hosts", "lost", 3, true],
  ])("of an ended attempt: %s", (_, outcome, hosts, planned) => {
    const placement = ["a", "b", "c"].slice(0, hosts).map((host, rank) => ({ host, rank }));
    const plan = restartPlanOfEnded({ outcome, placement }, (host) => host === "a");
    const previous = ["a", null, null].slice(0, hosts);
    expect(plan).toEqual(planned ? { previous, avoid: ["b", "c"].slice(0, hosts - 1) } : null);
  });
});
