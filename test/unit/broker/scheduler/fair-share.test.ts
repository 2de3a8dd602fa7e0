// Fair share: the rule (decay, comparison), the owner usage the state keeps, and the scheduler
// taking owners in turns within a priority.

import { describe, expect, it } from "vitest";
import {
  attemptCpuSeconds,
  compareOwnerShares,
  decayedUsage,
  FAIR_SHARE_HALF_LIFE_SECONDS,
  type OwnerShare,
} from "../../../../src/broker/scheduler/fair-share.ts";
import { compareQueueOrder } from "../../../../src/broker/scheduler/queue-order.ts";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import type { HostView, JobView } from "../../../../src/broker/scheduler/view.ts";
import { OwnerUsage } from "../../../../src/broker/state/owner-usage.ts";
import { recoverState } from "../../../../src/broker/state/recover.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import {
  attempt as attemptRecord,
  job as jobRecord,
  task as taskRecord,
} from "../../../conformance/store-suite.ts";

const HOUR = 3_600_000;
const HALF_LIFE_MS = FAIR_SHARE_HALF_LIFE_SECONDS * 1000;

describe("decayedUsage", () => {
  it.each([
    ["no time passed", 100, 0, 0, 100],
    ["one half-life", 100, 0, HALF_LIFE_MS, 50],
    ["two half-lives", 100, 0, 2 * HALF_LIFE_MS, 25],
    ["nothing used", 0, 0, HALF_LIFE_MS, 0],
    ["a clock that went back leaves it as it was", 100, 10, 5, 100],
  ])("%s", (_, value, at, now, expected) => {
    expect(decayedUsage(value, at, now)).toBeCloseTo(expected, 9);
  });

  it("takes another half-life", () => {
    expect(decayedUsage(8, 0, 3 * HOUR, 3600)).toBeCloseTo(1, 9);
  });
});

describe("compareOwnerShares", () => {
  const share = (runningCpus: number, recentCpuSeconds: number): OwnerShare => ({
    runningCpus,
    recentCpuSeconds,
  });
  it.each([
    ["fewer cpus running goes first", share(1, 1000), share(2, 0), -1],
    ["more cpus running goes after", share(3, 0), share(2, 0), 1],
    ["equal cpus: less recent use goes first", share(2, 10), share(2, 20), -1],
    ["equal in both: submit order decides", share(2, 10), share(2, 10), 0],
  ])("%s", (_, a, b, sign) => {
    expect(Math.sign(compareOwnerShares(a, b))).toBe(sign);
  });
});

describe("attemptCpuSeconds: measured CPU time where there is one, else cpus held times time run", () => {
  it.each([
    ["not measured: 4 cpus for 10 s", 4, 0, 10_000, null, 40],
    ["measured: what it burnt, not what it held", 4, 0, 10_000, 3.5, 3.5],
    ["measured nothing (it slept)", 4, 0, 10_000, 0, 0],
    ["measured more than one cpu's worth", 1, 0, 10_000, 19.5, 19.5],
    ["a clock that went back counts nothing held", 2, 10_000, 5000, null, 0],
  ])("%s", (_, cpus, startedAt, endedAt, measured, expected) => {
    expect(attemptCpuSeconds(cpus, startedAt, endedAt, measured)).toBe(expected);
  });

  it("recovery charges an owner the CPU time their attempts reported: an idle owner goes first", () => {
    const fourCpus = validateJobSpec({ command: "sleep 100", resources: { cpus: 4 } });
    const oneCpu = validateJobSpec({ command: "burn", resources: { cpus: 1 } });
    const t0 = 1_700_000_000_000;
    const ended = {
      state: "ended" as const,
      outcome: "succeeded" as const,
      startedAt: t0,
      endedAt: t0 + 100_000,
    };
    const state = recoverState(
      {
        jobs: [
          jobRecord("idle", { owner: "alice", state: "succeeded", spec: fourCpus, endedAt: t0 + 100_000 }),
          jobRecord("busy", { owner: "bob", state: "succeeded", spec: oneCpu, endedAt: t0 + 100_000 }),
          jobRecord("old", { owner: "carol", state: "succeeded", spec: oneCpu, endedAt: t0 + 100_000 }),
        ],
        tasks: ["idle", "busy", "old"].map((id) => taskRecord(id, 0, { state: "succeeded", attempts: 1 })),
        attempts: [
          // 4 cpus held for 100 s (400 slot-seconds), 10 CPU-seconds burnt.
          attemptRecord("idle", 0, 1, {
            ...ended,
            usage: { wallSeconds: 100, userSeconds: 9, systemSeconds: 1, peakMemoryMb: 5 },
          }),
          // 1 cpu held for 100 s, 100 CPU-seconds burnt.
          attemptRecord("busy", 0, 1, {
            ...ended,
            usage: { wallSeconds: 100, userSeconds: 95, systemSeconds: 5, peakMemoryMb: 5 },
          }),
          // An agent that did not measure CPU: 1 cpu for 100 s.
          attemptRecord("old", 0, 1, {
            ...ended,
            usage: { wallSeconds: 100, userSeconds: null, systemSeconds: null, peakMemoryMb: null },
          }),
        ],
        hosts: [],
        tokens: [],
        meta: {},
        checkpointParts: [],
      },
      t0 + 100_000,
    );
    const now = t0 + 100_000;
    expect(state.owners.share("alice", now).recentCpuSeconds).toBeCloseTo(10, 9);
    expect(state.owners.share("bob", now).recentCpuSeconds).toBeCloseTo(100, 9);
    expect(state.owners.share("carol", now).recentCpuSeconds).toBeCloseTo(100, 9);
    expect(compareOwnerShares(state.owners.share("alice", now), state.owners.share("bob", now))).toBeLessThan(
      0,
    );
  });
});

describe("OwnerUsage", () => {
  it("counts cpus running and decayed cpu-seconds of ended attempts", () => {
    const usage = new OwnerUsage();
    usage.started("alice", 2);
    usage.started("alice", 1);
    usage.started("bob", 1);
    expect(usage.share("alice", 0)).toStrictEqual({ runningCpus: 3, recentCpuSeconds: 0, factor: 1 });
    usage.stopped("alice", 2);
    usage.used("alice", 20, 10_000);
    // Alice used all there is, bob nothing: bob ranks first (1), alice second of two (1/2).
    expect(usage.share("alice", 10_000)).toStrictEqual({ runningCpus: 1, recentCpuSeconds: 20, factor: 0.5 });
    expect(usage.share("alice", 10_000 + HALF_LIFE_MS).recentCpuSeconds).toBeCloseTo(10, 9);
    expect(usage.share("carol", 0)).toStrictEqual({ runningCpus: 0, recentCpuSeconds: 0, factor: 1 });
    expect([...usage.shares(0).keys()].sort()).toStrictEqual(["alice", "bob"]);
  });

  it("adds uses in any order: an older end is decayed to the newest", () => {
    const inOrder = new OwnerUsage();
    inOrder.used("a", HALF_LIFE_MS / 1000, HALF_LIFE_MS);
    inOrder.used("a", HALF_LIFE_MS / 1000, 2 * HALF_LIFE_MS);
    const reversed = new OwnerUsage();
    reversed.used("a", HALF_LIFE_MS / 1000, 2 * HALF_LIFE_MS);
    reversed.used("a", HALF_LIFE_MS / 1000, HALF_LIFE_MS);
    const now = 3 * HALF_LIFE_MS;
    expect(reversed.share("a", now).recentCpuSeconds).toBeCloseTo(
      inOrder.share("a", now).recentCpuSeconds,
      6,
    );
  });
});

// ---- the scheduler

function job(id: string, owner: string, tasks: number, extra: Partial<JobView> = {}): JobView {
  return {
    id,
    owner,
    priority: 0,
    createdAt: 0,
    seq: Number(id.replace(/\D/g, "")) || 0,
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: null,
    *readyTasks() {
      for (let i = 0; i < tasks; i++) yield i;
    },
    ...extra,
  };
}

function host(name: string, slots: number): HostView {
  return {
    name,
    state: "ready",
    connected: true,
    slots,
    slotsFree: slots,
    memoryFreeMb: 8192,
    facts: {
      name,
      pool: "default",
      os: "linux",
      arch: "x86_64",
      cpus: slots,
      memoryMb: 8192,
      memFreeMb: 8192,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: 1000,
      speed: 1,
      labels: {},
      slotsFree: slots,
    },
  };
}

/** Placements per owner, given each job's owner. */
function placedPerOwner(jobs: JobView[], hosts: HostView[], owners?: Map<string, OwnerShare>) {
  const sorted = [...jobs].sort(compareQueueOrder);
  const plan = schedule({ now: 0, jobs: sorted, hosts, owners });
  const ownerOf = new Map(jobs.map((each) => [each.id, each.owner]));
  const counts: Record<string, number> = {};
  for (const placement of plan.place) {
    const owner = ownerOf.get(placement.jobId) ?? "";
    counts[owner] = (counts[owner] ?? 0) + 1;
  }
  return { counts, order: plan.place.map((p) => ownerOf.get(p.jobId)) };
}

describe("schedule with fair share", () => {
  it("two owners with work queued one after the other share the slots", () => {
    const { counts, order } = placedPerOwner([job("j1", "alice", 20), job("j2", "bob", 20)], [host("h", 4)]);
    expect(counts).toStrictEqual({ alice: 2, bob: 2 });
    expect(order).toStrictEqual(["alice", "bob", "alice", "bob"]);
  });

  it("the owner with fewer cpus running gets the free slots first", () => {
    const owners = new Map([
      ["alice", { runningCpus: 3, recentCpuSeconds: 0 }],
      ["bob", { runningCpus: 0, recentCpuSeconds: 0 }],
    ]);
    const { counts, order } = placedPerOwner(
      [job("j1", "alice", 20), job("j2", "bob", 20)],
      [host("h", 4)],
      owners,
    );
    expect(counts).toStrictEqual({ alice: 1, bob: 3 });
    // Bob reaches 3 running, then the tie goes to the job first in the queue (alice's).
    expect(order).toStrictEqual(["bob", "bob", "bob", "alice"]);
  });

  it("equal cpus running: the owner with less recent use goes first", () => {
    const owners = new Map([
      ["alice", { runningCpus: 1, recentCpuSeconds: 500 }],
      ["bob", { runningCpus: 1, recentCpuSeconds: 100 }],
    ]);
    const { order } = placedPerOwner([job("j1", "alice", 5), job("j2", "bob", 5)], [host("h", 3)], owners);
    expect(order).toStrictEqual(["bob", "alice", "bob"]);
  });

  it("the QoS tier's priority comes before fair share; a job's own priority does not", () => {
    const { counts } = placedPerOwner(
      [job("j1", "alice", 20, { qos: "high", qosPriority: 5 }), job("j2", "bob", 20)],
      [host("h", 4)],
    );
    expect(counts).toStrictEqual({ alice: 4 });
    const byPriority = placedPerOwner(
      [job("j1", "alice", 20, { priority: 5 }), job("j2", "bob", 20)],
      [host("h", 4)],
    );
    expect(byPriority.counts).toStrictEqual({ alice: 2, bob: 2 });
  });

  it("an owner's job that fits nowhere does not hold back the others", () => {
    const { counts } = placedPerOwner(
      [job("j1", "alice", 3, { cpus: 8 }), job("j2", "bob", 3), job("j3", "alice", 3)],
      [host("h", 4)],
    );
    expect(counts).toStrictEqual({ alice: 2, bob: 2 });
  });

  it("within one owner, jobs go in queue order", () => {
    const plan = schedule({
      now: 0,
      jobs: [job("j1", "alice", 2), job("j2", "alice", 2)],
      hosts: [host("h", 3)],
    });
    expect(plan.place.map((p) => `${p.jobId}/${p.taskIndex}`)).toStrictEqual(["j1/0", "j1/1", "j2/0"]);
  });
});
