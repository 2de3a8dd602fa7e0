// The rank stage: a job's feasible hosts scored (its rank expression, hosts it broke its contract
// on marked slow, the bytes of its inputs each holds), and the order that score makes with the room
// each host has left: slow hosts last, then the higher rank, then the more input bytes held (data
// affinity), then the most free slots (spread), then the name.

import { describe, expect, it } from "vitest";
import {
  compareScored,
  type ScoredHost,
  scoreHosts,
} from "../../../../../src/broker/scheduler/stages/rank.ts";
import { hostView, jobView } from "../../../../helpers/scheduler-views.ts";

const hosts = [
  hostView("a", { facts: { speed: 2, labels: { zone: "x" } } }),
  hostView("b", { facts: { speed: 5 } }),
  hostView("c", { facts: { speed: 1, labels: { zone: "y" } } }),
];

describe("scoreHosts", () => {
  it.each<[string, Parameters<typeof jobView>[1], [string, number, boolean][]]>([
    [
      "no rank: every host 0, in order",
      {},
      [
        ["a", 0, false],
        ["b", 0, false],
        ["c", 0, false],
      ],
    ],
    [
      "a rank: each host's value",
      { rank: "host.speed" },
      [
        ["a", 2, false],
        ["b", 5, false],
        ["c", 1, false],
      ],
    ],
    [
      "an expression of facts",
      { rank: "host.speed * 10.0" },
      [
        ["a", 20, false],
        ["b", 50, false],
        ["c", 10, false],
      ],
    ],
    [
      "a rank that fails on a host: the lowest there",
      { rank: 'host.labels.zone == "x" ? 1 : 0' },
      [
        ["a", 1, false],
        ["b", Number.NEGATIVE_INFINITY, false],
        ["c", 0, false],
      ],
    ],
    [
      "a rank that is no number: the lowest",
      { rank: "host.os" },
      [
        ["a", -Infinity, false],
        ["b", -Infinity, false],
        ["c", -Infinity, false],
      ],
    ],
    [
      "hosts the job broke its contract on: slow",
      { slowHosts: ["c", "a"] },
      [
        ["a", 0, true],
        ["b", 0, false],
        ["c", 0, true],
      ],
    ],
  ])("%s", (_, job, expected) => {
    const scored = scoreHosts(jobView("j", job), hosts);
    expect(scored.map((each) => [each.host.name, each.rank, each.slow])).toStrictEqual(expected);
    expect(scored.map((each) => each.host)).toStrictEqual(hosts);
  });

  it("scores no host when none is feasible", () => {
    expect(scoreHosts(jobView("j", { rank: "host.speed" }), [])).toStrictEqual([]);
  });
});

describe("compareScored", () => {
  const scored = (name: string, rank: number, slow = false, held = 0): ScoredHost => ({
    host: hostView(name),
    rank,
    slow,
    held,
  });
  it.each<[string, ScoredHost, number, ScoredHost, number, "a" | "b" | "same"]>([
    ["a slow host last, whatever its rank", scored("a", 9, true), 4, scored("b", 0), 0, "b"],
    ["both slow: the higher rank", scored("a", 1, true), 0, scored("b", 2, true), 4, "b"],
    ["the higher rank, whatever the room", scored("a", 3), 1, scored("b", 2), 4, "a"],
    ["a rank above the lowest one", scored("a", Number.NEGATIVE_INFINITY), 4, scored("b", -5), 0, "b"],
    [
      "equal ranks: the more of the job's input bytes held",
      scored("a", 1, false, 10),
      1,
      scored("b", 1, false, 9),
      4,
      "a",
    ],
    ["the higher rank before the bytes held", scored("a", 1, false, 900), 4, scored("b", 2), 0, "b"],
    ["a slow host last, whatever it holds", scored("a", 1, true, 900), 4, scored("b", 1), 0, "b"],
    ["equal bytes held: the most free slots", scored("a", 1, false, 5), 1, scored("b", 1, false, 5), 3, "b"],
    ["equal ranks: the most free slots", scored("a", 1), 1, scored("b", 1), 3, "b"],
    ["equal ranks and room: the name", scored("a", 1), 2, scored("b", 1), 2, "a"],
    ["the same host: alike", scored("a", 1), 2, scored("a", 1), 2, "same"],
  ])("%s", (_, a, freeA, b, freeB, first) => {
    const order = Math.sign(compareScored(a, b, freeA, freeB));
    expect(order).toBe(first === "a" ? -1 : first === "b" ? 1 : 0);
    expect(Math.sign(compareScored(b, a, freeB, freeA)) + 0).toBe(-order + 0);
  });
});
