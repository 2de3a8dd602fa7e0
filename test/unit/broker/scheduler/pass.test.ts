// One scheduling pass's working state (Pass): which hosts take work and the room it copies from
// them, the free slots in all, the policy with its defaults, the running limits counting what it
// places, the feasible and scored hosts worked out once for jobs alike, a gang's hosts withheld,
// and the earliest pass asked for again.

import { describe, expect, it } from "vitest";
import { batchKey } from "../../../../src/broker/scheduler/batches.ts";
import { Pass } from "../../../../src/broker/scheduler/pass.ts";
import type { Placement } from "../../../../src/broker/scheduler/plan.ts";
import { DEFAULT_POLICY } from "../../../../src/broker/scheduler/policy.ts";
import { userTierKey } from "../../../../src/broker/scheduler/qos.ts";
import type { HostView } from "../../../../src/broker/scheduler/view.ts";
import { parseQosFile } from "../../../../src/common/model/qos-file.ts";
import { type HostFields, passOver, roomsOf } from "../../../helpers/scheduler-pass.ts";
import { hostView, jobView, NOW } from "../../../helpers/scheduler-views.ts";

/** A pass over these hosts (by name and fields) and no jobs. */
const passOf = (...args: Parameters<typeof passOver>): Pass => passOver(...args).pass;

/** Host names, in order. */
const names = (hosts: readonly { name: string }[]): string[] => hosts.map((host) => host.name);

describe("Pass: the hosts that take work", () => {
  it.each<[string, Record<string, HostFields>, string[], number]>([
    ["no hosts", {}, [], 0],
    ["a ready, connected host", { a: { slots: 4, slotsFree: 3 } }, ["a"], 3],
    ["free slots of every host added up", { a: { slotsFree: 3 }, b: { slotsFree: 2 } }, ["a", "b"], 5],
    ["a draining host takes none", { a: {}, b: { state: "draining" } }, ["a"], 4],
    ["a lost host takes none", { a: { state: "lost" }, b: { slotsFree: 1 } }, ["b"], 1],
    ["a host not connected takes none", { a: { connected: false }, b: { slotsFree: 2 } }, ["b"], 2],
    [
      "a host running more than its slots counts no free slot, its room kept as it is",
      { a: { slotsFree: -2 }, b: { slotsFree: 1 } },
      ["a", "b"],
      1,
    ],
    ["a full host takes work, with no free slot", { a: { slotsFree: 0 } }, ["a"], 0],
  ])("%s", (_, hosts, open, slotsFree) => {
    const pass = passOf(hosts);
    expect([...pass.capacity.keys()]).toStrictEqual(open);
    expect(pass.slotsFree).toBe(slotsFree);
  });

  it("copies each host's room: what the pass takes leaves the host's view alone", () => {
    const host = hostView("a", { slotsFree: 3, memoryFreeMb: 2048, gpusFree: 1, customFree: { fpga: 2 } });
    const pass = new Pass({ now: NOW, jobs: [], hosts: [host] }, {});
    const room = pass.capacity.get("a")!;
    expect(room).toStrictEqual({ slotsFree: 3, memoryFreeMb: 2048, gpusFree: 1, customFree: { fpga: 2 } });
    room.slotsFree = 0;
    room.customFree!.fpga = 0;
    expect(host.slotsFree).toBe(3);
    expect(host.customFree).toStrictEqual({ fpga: 2 });
  });

  it("starts with an empty plan and nothing placed", () => {
    const pass = passOf({ a: {} });
    expect(pass.plan).toStrictEqual({ place: [], stop: [], preempt: [] });
    expect(pass.placedJobs.size).toBe(0);
    expect(pass.placedFirst.size).toBe(0);
    expect(pass.placedCpus.size).toBe(0);
  });
});

describe("Pass: policy and limits", () => {
  it("takes the policy's defaults for what the state leaves out", () => {
    expect(passOf({}).policy).toStrictEqual(DEFAULT_POLICY);
    const pass = passOf({}, { policy: { preempt: false, gangReserveSeconds: 60 } });
    expect(pass.policy).toStrictEqual({ ...DEFAULT_POLICY, preempt: false, gangReserveSeconds: 60 });
  });

  it("holds jobs to the state's running limits, counting what runs and what it places", () => {
    const qos = parseQosFile("tiers:\n  normal:\n    maxRunningCpus: 4\n");
    const runningUse = {
      byUserTier: new Map([[userTierKey("alice", "normal"), { cpus: 2, gpus: 0 }]]),
      byGroup: new Map(),
      groupOf: new Map(),
    };
    const pass = passOf({ a: {} }, { qos, runningUse });
    const job = jobView("j", { owner: "alice", cpus: 2 });
    expect(pass.limits.running.held(job)).toBeNull();
    pass.place(job, { kind: "task", jobId: "j", taskIndex: 0, host: "a" });
    expect(pass.limits.running.held(job)).toBe(
      "user alice is at the limit of 4 running CPUs of QoS normal (4 running, a task needs 2)",
    );
  });

  it("holds nothing without a QoS policy", () => {
    const pass = passOf({ a: {} });
    const job = jobView("j", { owner: "alice", cpus: 64 });
    for (let i = 0; i < 3; i++) pass.place(job, { kind: "task", jobId: "j", taskIndex: i, host: "a" });
    expect(pass.limits.running.held(job)).toBeNull();
  });

  it("counts an array's placements against its throttle", () => {
    const pass = passOf({ a: {} });
    const job = jobView("j", { parallel: 2, liveTasks: 1 });
    pass.place(job, { kind: "task", jobId: "j", taskIndex: 1, host: "a" });
    expect(pass.limits.throttle.reason(job)).toBe(
      "1 of its tasks run and 1 start in this pass, the most its array allows at once (parallel: 2)",
    );
  });
});

describe("Pass.place", () => {
  it("adds each placement to the plan, in order, and keeps its job by id", () => {
    const pass = passOf({ a: {}, b: {} });
    const first = jobView("j1");
    const second = jobView("j2");
    const placements: Placement[] = [
      { kind: "task", jobId: "j1", taskIndex: 0, host: "a" },
      { kind: "gang", jobId: "j2", taskIndex: 0, host: "a", ranks: ["a", "b"] },
      { kind: "task", jobId: "j1", taskIndex: 1, host: "b" },
    ];
    pass.place(first, placements[0]);
    pass.place(second, placements[1]);
    pass.place(first, placements[2]);
    expect(pass.plan.place).toStrictEqual(placements);
    expect([...pass.placedJobs]).toStrictEqual([
      ["j1", first],
      ["j2", second],
    ]);
  });
});

describe("Pass.feasibleFor", () => {
  const hosts = (): HostView[] => [
    hostView("small", { slots: 2 }),
    hostView("gone", { state: "lost" }),
    hostView("big", { slots: 8, facts: { labels: { zone: "north" } } }),
    hostView("away", { connected: false, slots: 8 }),
  ];

  it.each<[string, Parameters<typeof jobView>[1], string[]]>([
    ["every host that takes work, in the state's order", {}, ["small", "big"]],
    ["those with the slots for one task", { cpus: 4 }, ["big"]],
    ["those whose facts meet the requirements", { requirements: 'host.labels.zone == "north"' }, ["big"]],
    ["none", { cpus: 16 }, []],
  ])("%s", (_, fields, expected) => {
    const pass = new Pass({ now: NOW, jobs: [], hosts: hosts() }, {});
    expect(names(pass.feasibleFor(jobView("j", fields)))).toStrictEqual(expected);
  });

  it("leaves out a host the pass's room has none of, whatever its view says", () => {
    const pass = new Pass({ now: NOW, jobs: [], hosts: hosts() }, {});
    pass.capacity.delete("small");
    expect(names(pass.feasibleFor(jobView("j")))).toStrictEqual(["big"]);
  });

  it("works the answer out once a batch key: jobs alike share it, others get their own", () => {
    const pass = new Pass({ now: NOW, jobs: [], hosts: hosts() }, {});
    const one = jobView("one", { cpus: 1 });
    const alike = jobView("alike", { cpus: 1 });
    const bigger = jobView("bigger", { cpus: 4 });
    const first = pass.feasibleFor(one);
    expect(pass.feasibleFor(alike)).toBe(first);
    expect(pass.feasibleFor(one, batchKey(one))).toBe(first);
    expect(names(pass.feasibleFor(bigger))).toStrictEqual(["big"]);
    // The key given is the one the answer is kept under.
    expect(pass.feasibleFor(bigger, batchKey(one))).toBe(first);
    expect(names(pass.feasibleFor(one, "another key"))).toStrictEqual(["small", "big"]);
    expect(pass.feasibleFor(one, "another key")).not.toBe(first);
  });
});

describe("Pass.scoredFor", () => {
  const hosts = (): HostView[] => [
    hostView("a", { facts: { speed: 1 } }),
    hostView("b", { facts: { speed: 3 } }),
    hostView("c", { facts: { speed: 2 } }),
    hostView("off", { state: "draining", facts: { speed: 9 } }),
  ];

  it("scores the job's feasible hosts, each with the pass's own room for it", () => {
    const pass = new Pass({ now: NOW, jobs: [], hosts: hosts() }, {});
    const job = jobView("j", { rank: "host.speed" });
    const { scored, rooms, queue } = pass.scoredFor(job, batchKey(job));
    expect(scored.map((each) => [each.host.name, each.rank, each.slow])).toStrictEqual([
      ["a", 1, false],
      ["b", 3, false],
      ["c", 2, false],
    ]);
    expect(rooms).toHaveLength(3);
    rooms.forEach((room, i) => {
      expect(room).toBe(pass.capacity.get(scored[i].host.name));
    });
    expect(queue).toBeUndefined();
  });

  it("scores the hosts found feasible under the batch key given", () => {
    const pass = new Pass({ now: NOW, jobs: [], hosts: hosts() }, {});
    const faster = jobView("faster", { requirements: "host.speed > 1" });
    pass.feasibleFor(faster);
    const { scored } = pass.scoredFor(jobView("j"), batchKey(faster));
    expect(names(scored.map((each) => each.host))).toStrictEqual(["b", "c"]);
  });

  it("shares one answer between jobs of one batch and one rank expression", () => {
    const pass = new Pass({ now: NOW, jobs: [], hosts: hosts() }, {});
    const one = jobView("one", { rank: "host.speed" });
    const key = batchKey(one);
    const first = pass.scoredFor(one, key);
    expect(pass.scoredFor(jobView("alike", { rank: "host.speed" }), key)).toBe(first);
    const other = pass.scoredFor(jobView("other rank", { rank: "-host.speed" }), key);
    expect(other).not.toBe(first);
    expect(other.scored.map((each) => each.rank)).toStrictEqual([-1, -3, -2]);
    const bigger = jobView("bigger", { rank: "host.speed", memoryMb: 100 });
    expect(pass.scoredFor(bigger, batchKey(bigger))).not.toBe(first);
  });

  it("scores a job with hosts it was slow on for itself alone, each time", () => {
    const pass = new Pass({ now: NOW, jobs: [], hosts: hosts() }, {});
    const slow = jobView("slow", { slowHosts: ["b"] });
    const key = batchKey(slow);
    const plain = pass.scoredFor(jobView("plain"), key);
    const first = pass.scoredFor(slow, key);
    expect(first).not.toBe(plain);
    expect(first.scored.map((each) => each.slow)).toStrictEqual([false, true, false]);
    const again = pass.scoredFor(slow, key);
    expect(again).not.toBe(first);
    expect(again.scored).toStrictEqual(first.scored);
    // A job alike without slow hosts still gets the shared answer, not the slow job's.
    expect(pass.scoredFor(jobView("plain too"), key)).toBe(plain);
  });
});

describe("Pass.withhold", () => {
  it.each<[string, Record<string, HostFields>, string, number, Record<string, [number, number]>]>([
    [
      "takes a host's room from everything behind",
      { a: { slotsFree: 3, memoryFreeMb: 1000 }, b: { slotsFree: 2, memoryFreeMb: 500 } },
      "a",
      2,
      { a: [0, 0], b: [2, 500] },
    ],
    [
      "a host the pass has no room of: nothing",
      { a: { slotsFree: 3, memoryFreeMb: 1000 }, off: { state: "draining" } },
      "off",
      3,
      { a: [3, 1000] },
    ],
    [
      "a host running more than its slots takes no free slot away",
      { a: { slotsFree: -1, memoryFreeMb: 1000 }, b: { slotsFree: 2, memoryFreeMb: 500 } },
      "a",
      2,
      { a: [0, 0], b: [2, 500] },
    ],
  ])("%s", (_, hosts, name, slotsFree, rooms) => {
    const pass = passOf(hosts);
    pass.withhold(name);
    expect(pass.slotsFree).toBe(slotsFree);
    expect(roomsOf(pass)).toStrictEqual(rooms);
  });

  it("withholding a host twice takes its slots once", () => {
    const pass = passOf({ a: { slotsFree: 3 }, b: { slotsFree: 2 } });
    pass.withhold("a");
    pass.withhold("a");
    expect(pass.slotsFree).toBe(2);
  });
});

describe("Pass.recheckBy", () => {
  it.each<[string, number[], number | undefined]>([
    ["none asked", [], undefined],
    ["one", [5000], 5000],
    ["the earliest of later ones", [5000, 9000], 5000],
    ["the earliest of earlier ones", [9000, 5000, 7000], 5000],
  ])("%s", (_, asked, expected) => {
    const pass = passOf({});
    for (const at of asked) pass.recheckBy(at);
    expect(pass.plan.recheckAt).toBe(expected);
  });
});
