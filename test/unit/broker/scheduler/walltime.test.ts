import { describe, expect, it } from "vitest";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import type { HostView, JobView } from "../../../../src/broker/scheduler/view.ts";
import {
  pastWalltimeMargin,
  usableSeconds,
  walltimeAt,
  walltimeInfeasibility,
  walltimeStops,
} from "../../../../src/broker/scheduler/walltime.ts";
import type { HostFacts } from "../../../../src/common/model/host-facts.ts";

const NOW = 1_800_000_000_000;

describe("a pilot's walltime", () => {
  it("is absent on hosts without --ends-at, and counts down to it on pilots", () => {
    expect(walltimeAt(null, NOW, 60)).toBeUndefined();
    expect(walltimeAt(NOW + 90_000, NOW, 60)).toStrictEqual({ secondsLeft: 90, marginSeconds: 60 });
    expect(walltimeAt(NOW - 5_000, NOW, 60)).toStrictEqual({ secondsLeft: 0, marginSeconds: 60 });
    expect(usableSeconds(undefined)).toBe(Number.POSITIVE_INFINITY);
    expect(usableSeconds({ secondsLeft: 90, marginSeconds: 60 })).toBe(30);
    expect(usableSeconds({ secondsLeft: 50, marginSeconds: 60 })).toBe(0);
  });

  it.each([
    ["no walltime", undefined, false],
    ["well before the margin", { secondsLeft: 600, marginSeconds: 60 }, false],
    ["just outside the margin", { secondsLeft: 60.5, marginSeconds: 60 }, false],
    ["at the margin", { secondsLeft: 60, marginSeconds: 60 }, true],
    ["inside the margin", { secondsLeft: 10, marginSeconds: 60 }, true],
  ])("past the margin: %s", (_, walltime, expected) => {
    expect(pastWalltimeMargin(walltime)).toBe(expected);
  });
});

describe("walltime-aware placement", () => {
  const pilot = (secondsLeft: number) => ({ secondsLeft, marginSeconds: 10 });
  it.each([
    ["any job on a host without a walltime", { expectedSeconds: 1e6 }, undefined, null],
    ["a job of unknown length on a pilot with time left", {}, pilot(600), null],
    ["a 100 s job on a pilot with 600 s left", { expectedSeconds: 100 }, pilot(600), null],
    ["a job that exactly fits before the margin", { expectedSeconds: 590 }, pilot(600), null],
    [
      "a 900 s job without checkpoints on a pilot with 600 s left",
      { expectedSeconds: 900 },
      pilot(600),
      "task needs about 900 s, pilot has 590 s before its walltime margin, and the job has no checkpoint to move with",
    ],
    [
      "the same job once it checkpoints: it can move in time",
      { expectedSeconds: 900, checkpoints: true },
      pilot(600),
      null,
    ],
    [
      "anything on a pilot inside its margin",
      { expectedSeconds: 1, checkpoints: true },
      pilot(8),
      "pilot walltime ends in 8 s (within the 10 s margin)",
    ],
  ])("%s", (_, job, walltime, expected) => {
    expect(walltimeInfeasibility(job, walltime)).toBe(expected);
  });
});

describe("walltimeStops", () => {
  const attempts = [
    { jobId: "j1", taskIndex: 0, attempt: 1, stopping: false },
    { jobId: "j1", taskIndex: 1, attempt: 2, stopping: true },
    { jobId: "j2", taskIndex: 0, attempt: 1, stopping: false },
  ];
  it("moves nothing while the pilot has more than its margin left", () => {
    expect(walltimeStops({ secondsLeft: 61, marginSeconds: 60 }, attempts)).toStrictEqual([]);
    expect(walltimeStops(undefined, attempts)).toStrictEqual([]);
  });
  it("migrates every live attempt not already stopping, anywhere, as `pilot walltime`", () => {
    const stops = walltimeStops({ secondsLeft: 59, marginSeconds: 60 }, attempts);
    expect(stops.map((stop) => `${stop.jobId}/${stop.taskIndex}/${stop.attempt}`)).toStrictEqual([
      "j1/0/1",
      "j2/0/1",
    ]);
    for (const stop of stops) {
      expect(stop.intent).toStrictEqual({ outcome: "migrated", reason: { kind: "pilot-walltime" } });
      expect(stop.migrateTo).toStrictEqual({ to: null });
    }
  });
});

describe("the scheduler and pilots' walltimes", () => {
  const facts = (name: string): HostFacts => ({
    name,
    pool: "hpc",
    os: "linux",
    arch: "x86_64",
    cpus: 4,
    memoryMb: 1024,
    memFreeMb: 1024,
    load1: 0,
    cpuFree: 1,
    diskFreeMb: 1000,
    speed: 1,
    labels: {},
    slotsFree: 4,
  });
  const pilot: HostView = {
    name: "hpc-1",
    state: "ready",
    connected: true,
    slots: 4,
    slotsFree: 4,
    memoryFreeMb: 1024,
    facts: facts("hpc-1"),
    walltime: { secondsLeft: 600, marginSeconds: 60 },
  };
  const job = (id: string, seq: number, extra: Partial<JobView>): JobView => ({
    id,
    priority: 0,
    createdAt: 0,
    seq,
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: null,
    readyTasks: () => [0],
    ...extra,
  });

  it("jobs alike but for their length are told apart: the long one waits, the short one runs", () => {
    const plan = schedule({
      now: NOW,
      jobs: [job("long", 1, { expectedSeconds: 5000 }), job("short", 2, { expectedSeconds: 60 })],
      hosts: [pilot],
    });
    expect(plan.place.map((each) => each.jobId)).toStrictEqual(["short"]);
  });
});
