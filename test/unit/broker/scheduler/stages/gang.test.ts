// Gang placement: all ranks at once or none, backfill behind a waiting gang, no deadlock between
// gangs, the restart pool kept for replacements, a restart back on the healthy hosts, and hosts
// reserved for a gang that has waited past its reserve time.

import { describe, expect, it } from "vitest";
import { hostsOfPlacement } from "../../../../../src/broker/scheduler/plan.ts";
import { schedule } from "../../../../../src/broker/scheduler/schedule.ts";
import {
  chooseGangHosts,
  gangMayReserve,
  gangShortfall,
  reserveGangHosts,
} from "../../../../../src/broker/scheduler/stages/gang.ts";
import { scoreHosts } from "../../../../../src/broker/scheduler/stages/rank.ts";
import type { GangNeeds, HostView, JobView } from "../../../../../src/broker/scheduler/view.ts";
import type { HostFacts } from "../../../../../src/common/model/host-facts.ts";

const NOW = 10_000_000;

function host(name: string, slotsFree = 1, pool = "default"): HostView {
  const facts: HostFacts = {
    name,
    pool,
    os: "linux",
    arch: "x86_64",
    cpus: 1,
    memoryMb: 1024,
    memFreeMb: 1024,
    load1: 0,
    cpuFree: 1,
    diskFreeMb: 1000,
    speed: 1,
    labels: {},
    slotsFree,
  };
  return { name, state: "ready", connected: true, slots: 1, slotsFree, memoryFreeMb: 1024, facts };
}

function job(id: string, seq: number, extra: Partial<JobView> = {}): JobView {
  return {
    id,
    priority: 0,
    createdAt: NOW - 1000,
    seq,
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: null,
    readyTasks: () => [0],
    ...extra,
  };
}

const gang = (nodes: number, restartPool: string | null = null, nodesPerHost = 1) => ({
  gang: { nodes, restartPool, nodesPerHost },
});

function placed(jobs: JobView[], hosts: HostView[], gangReserveSeconds = 300) {
  const plan = schedule({
    now: NOW,
    jobs,
    hosts,
    policy: { preempt: false, reschedule: false, gangReserveSeconds },
  });
  return plan.place.map((each) => `${each.jobId}:${hostsOfPlacement(each).join(",")}`);
}

describe("gang placement", () => {
  it("places all 3 ranks on 3 hosts at once, rank 0's host first", () => {
    expect(placed([job("g", 1, gang(3))], [host("a"), host("b"), host("c")])).toStrictEqual(["g:a,b,c"]);
  });

  it("a 4-rank gang on 3 hosts waits, and 1-rank jobs behind it run meanwhile", () => {
    const jobs = [job("g", 1, gang(4)), job("s1", 2), job("s2", 3)];
    expect(placed(jobs, [host("a"), host("b"), host("c")])).toStrictEqual(["s1:a", "s2:b"]);
  });

  it("two 2-rank gangs on 3 hosts: one starts whole, the other waits whole (no partial gang, no deadlock)", () => {
    const result = placed([job("g1", 1, gang(2)), job("g2", 2, gang(2))], [host("a"), host("b"), host("c")]);
    expect(result).toStrictEqual(["g1:a,b"]);
    // Once the first gang's hosts are busy, the second still takes none of the last host alone.
    expect(placed([job("g2", 2, gang(2))], [host("a", 0), host("b", 0), host("c")])).toStrictEqual([]);
  });

  it("keeps the restart pool's hosts out of first placements", () => {
    const hosts = [host("a"), host("b"), host("s", 1, "spares")];
    expect(placed([job("g", 1, gang(2, "spares"))], hosts)).toStrictEqual(["g:a,b"]);
    expect(placed([job("g", 1, gang(3, "spares"))], hosts)).toStrictEqual([]);
    // Without a restart pool every host may take a rank.
    expect(placed([job("g", 1, gang(3))], hosts)).toStrictEqual(["g:a,b,s"]);
  });

  it("a restart puts ranks back on their healthy hosts and the failed rank on a spare", () => {
    const hosts = [host("a"), host("b"), host("c"), host("d"), host("s", 1, "spares")];
    const restart = job("g", 1, {
      gang: { nodes: 3, nodesPerHost: 1, restartPool: "spares", previous: ["c", null, "a"], avoid: ["b"] },
    });
    expect(placed([restart], hosts)).toStrictEqual(["g:c,s,a"]);
    // No spare free: any other matching host, never the failed one.
    const noSpare = [host("a"), host("b"), host("c"), host("d"), host("s", 0, "spares")];
    expect(placed([restart], noSpare)).toStrictEqual(["g:c,d,a"]);
  });

  it.each([
    ["waiting less than the reserve time: smaller work takes the free host", NOW - 10_000, ["s:a"]],
    ["waiting past the reserve time: the free host is held for the gang", NOW - 400_000, []],
  ])("%s", (_, readySince, expected) => {
    const jobs = [job("g", 1, { ...gang(2), readySince }), job("s", 2)];
    expect(placed(jobs, [host("a"), host("b", 0)])).toStrictEqual(expected);
  });

  it("nodesPerHost lets a host take several ranks, as its room allows", () => {
    const roomy = (name: string, free: number) => ({ ...host(name, free), slots: 4 });
    expect(placed([job("g", 1, gang(4, null, 2))], [roomy("a", 4), roomy("b", 4)])).toStrictEqual([
      "g:a,a,b,b",
    ]);
    // A host with room for one rank takes one; another takes the rest it may.
    expect(placed([job("g", 1, gang(3, null, 2))], [roomy("a", 1), roomy("b", 4)])).toStrictEqual([
      "g:b,b,a",
    ]);
    // One rank per host by default, whatever the room.
    expect(placed([job("g", 1, gang(4))], [roomy("a", 4), roomy("b", 4)])).toStrictEqual([]);
  });

  it("a gang that could never fit reserves nothing", () => {
    const jobs = [job("g", 1, { ...gang(5), readySince: NOW - 400_000 }), job("s", 2)];
    expect(placed(jobs, [host("a"), host("b", 0)])).toStrictEqual(["s:a"]);
  });
});

describe("gang rules", () => {
  it("chooses nothing when fewer hosts than ranks have room for a rank's cpus", () => {
    const hosts = [host("a", 2), host("b", 1), host("c", 2)];
    const scored = scoreHosts({ rank: null }, hosts);
    const capacity = new Map(
      hosts.map((each) => [each.name, { slotsFree: each.slotsFree, memoryFreeMb: 1024 }]),
    );
    expect(
      chooseGangHosts({ nodes: 2, cpus: 2, memoryMb: 0, restartPool: null }, scored, capacity),
    ).toStrictEqual(["a", "c"]);
    expect(
      chooseGangHosts({ nodes: 3, cpus: 2, memoryMb: 0, restartPool: null }, scored, capacity),
    ).toBeNull();
  });

  /** Hosts scored by a rank that favours the names listed in `better` (in that order), and their room. */
  function field(hosts: HostView[], better: string[] = [], missing: string[] = []) {
    const scored = scoreHosts({ rank: null }, hosts).map((each) => ({
      ...each,
      rank: better.includes(each.host.name) ? better.length - better.indexOf(each.host.name) : 0,
    }));
    const capacity = new Map(
      hosts
        .filter((each) => !missing.includes(each.name))
        .map((each) => [each.name, { slotsFree: each.slotsFree, memoryFreeMb: 1024 }]),
    );
    return { scored, capacity };
  }
  const needs = (extra: Partial<GangNeeds> = {}): GangNeeds => ({
    nodes: 2,
    cpus: 1,
    memoryMb: 0,
    restartPool: null,
    ...extra,
  });

  it.each<[string, GangNeeds, ReturnType<typeof field>, string[] | null]>([
    [
      "a scored host with no room entry (it takes no work) gets no rank",
      needs(),
      field([host("a"), host("gone"), host("b")], ["gone"], ["gone"]),
      ["a", "b"],
    ],
    [
      "a scored host with no room entry, listed last, gets no rank",
      needs(),
      field([host("a"), host("b"), host("gone")], ["gone"], ["gone"]),
      ["a", "b"],
    ],
    [
      "several ranks per host: a host's room taken by one rank is gone for the next",
      needs({ nodes: 3, nodesPerHost: 2 }),
      field([host("b", 2), host("a", 1), host("c", 2)], ["a"]),
      ["a", "b", "b"],
    ],
    [
      "a restart does not go back to a previous host the gang no longer matches, free as it is",
      needs({ previous: ["x", null] }),
      {
        scored: field([host("a"), host("b")]).scored,
        capacity: field([host("a"), host("b"), host("x")]).capacity,
      },
      ["a", "b"],
    ],
    [
      "a restart's previous hosts beyond the gang's ranks are not taken",
      needs({ previous: ["a", "b", "c"] }),
      field([host("c"), host("a"), host("b")], ["c"]),
      ["a", "b"],
    ],
  ])("chooseGangHosts: %s", (_, gangNeeds, { scored, capacity }, expected) => {
    expect(chooseGangHosts(gangNeeds, scored, capacity)).toStrictEqual(expected);
  });

  it.each<[string, GangNeeds, ReturnType<typeof field>, string[]]>([
    [
      "the hosts with the most free slots, then the best ranked",
      needs(),
      field([host("a", 1), host("b", 2), host("c", 1), host("d", 0)], ["c"]),
      ["b", "c"],
    ],
    [
      "a host with no room entry counts as none free",
      needs(),
      field([host("gone", 3), host("a", 0), host("b", 1)], ["gone"], ["gone"]),
      ["b", "gone"],
    ],
    [
      "never a host of the restart pool",
      needs({ restartPool: "spares" }),
      field([host("a", 0), host("s", 4, "spares"), host("b", 0)]),
      ["a", "b"],
    ],
    [
      "too few hosts outside the restart pool: none",
      needs({ restartPool: "spares" }),
      field([host("a", 1), host("s", 4, "spares")]),
      [],
    ],
    [
      "several ranks per host: as many hosts as the ranks need",
      needs({ nodes: 4, nodesPerHost: 2 }),
      field([host("a", 0), host("b", 1)]),
      ["b", "a"],
    ],
    [
      "several ranks per host, rounded up",
      needs({ nodes: 3, nodesPerHost: 2 }),
      field([host("a", 0), host("b", 1), host("c", 0)]),
      ["b", "a"],
    ],
  ])("reserveGangHosts: %s", (_, gangNeeds, { scored, capacity }, expected) => {
    expect(reserveGangHosts(gangNeeds, scored, capacity)).toStrictEqual(expected);
  });

  it.each([
    [NOW - 299_000, false],
    [NOW - 300_000, true],
  ])("ready since %i: may reserve %s", (since, expected) => {
    expect(gangMayReserve(since, NOW)).toBe(expected);
  });

  it.each([
    [4, 3, 1, "needs 4 hosts, 3 match, 1 has room"],
    [2, 1, 0, "needs 2 hosts, 1 matches, 0 have room"],
    [1, 2, 1, "needs 1 host, 2 match, 1 has room"],
  ])("explains a shortfall of %i", (nodes, matching, withRoom, expected) => {
    expect(gangShortfall(nodes, matching, withRoom)).toBe(expected);
  });
});
