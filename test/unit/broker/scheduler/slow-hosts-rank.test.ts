// Hosts where a job broke its performance contract rank after all others for that job: it goes
// there only when nothing else has room, and other jobs are not affected.

import { describe, expect, it } from "vitest";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import { compareScored, scoreHosts } from "../../../../src/broker/scheduler/stages/rank.ts";
import type { HostView, JobView } from "../../../../src/broker/scheduler/view.ts";
import { compileExpression } from "../../../../src/common/model/cel.ts";

function host(name: string, slotsFree = 2, speed = 1): HostView {
  return {
    name,
    state: "ready",
    connected: true,
    slots: 2,
    slotsFree,
    memoryFreeMb: 8192,
    facts: {
      name,
      pool: "default",
      os: "linux",
      arch: "x86_64",
      cpus: 2,
      memoryMb: 8192,
      memFreeMb: 8192,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: 10_000,
      speed,
      labels: {},
      slotsFree,
    },
  };
}

function job(id: string, tasks: number, slowHosts?: string[], seq = 0): JobView {
  return {
    id,
    priority: 0,
    createdAt: 0,
    seq,
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: compileExpression("host.speed"),
    ...(slowHosts ? { slowHosts } : {}),
    *readyTasks() {
      for (let i = 0; i < tasks; i++) yield i;
    },
  };
}

describe("slow hosts in the rank stage", () => {
  it.each<[string, string[] | undefined, string[]]>([
    ["no slow host: the fastest first", undefined, ["fast", "mid", "slow"]],
    ["the fastest broke the contract: it goes last", ["fast"], ["mid", "slow", "fast"]],
    ["two slow hosts keep their rank order among themselves", ["fast", "mid"], ["slow", "fast", "mid"]],
  ])("%s", (_, slowHosts, order) => {
    const hosts = [host("slow", 2, 1), host("fast", 2, 3), host("mid", 2, 2)];
    const scored = scoreHosts(job("j", 1, slowHosts), hosts);
    scored.sort((a, b) => compareScored(a, b, a.host.slotsFree, b.host.slotsFree));
    expect(scored.map((each) => each.host.name)).toEqual(order);
  });

  it("places a job on its slow host only once the others are full, and leaves other jobs alone", () => {
    const hosts = [host("a", 2, 5), host("b", 2, 1)];
    const place = schedule({
      now: 0,
      jobs: [job("slow-on-a", 3, ["a"], 1), job("other", 1, undefined, 2)],
      hosts,
    }).place;
    expect(place.map((p) => `${p.jobId}/${p.taskIndex}@${p.host}`)).toEqual([
      "slow-on-a/0@b",
      "slow-on-a/1@b",
      "slow-on-a/2@a",
      "other/0@a",
    ]);
  });
});
