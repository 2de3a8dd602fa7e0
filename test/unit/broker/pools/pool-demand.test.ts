// Work offered to the batch pools in order, and each pool's own join token.

import { describe, expect, it } from "vitest";
import {
  type OfferedJob,
  offerWork,
  type PoolOffer,
  pilotProbe,
} from "../../../../src/broker/pools/pool-demand.ts";
import { joinTokenScope, poolJoinToken } from "../../../../src/broker/pools/pool-token.ts";
import { RunningQuotas, userTierKey } from "../../../../src/broker/scheduler/qos.ts";
import { compileExpression } from "../../../../src/common/model/cel.ts";
import { parsePoolsFile } from "../../../../src/common/model/pools-file.ts";
import { parseQosFile } from "../../../../src/common/model/qos-file.ts";

const NOW = 1_800_000_000_000;
const [hpc, cloud] = parsePoolsFile(
  "pools:\n  - {name: hpc, driver: slurm, slotsPerPilot: 2, walltime: 600}\n  - {name: cloud, driver: slurm, slotsPerPilot: 2}\n",
);

function job(id: string, tasks: number, extra: Partial<OfferedJob> = {}): OfferedJob {
  return {
    id,
    priority: 0,
    createdAt: 0,
    seq: 0,
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: null,
    readyTasks: () => Array.from({ length: tasks }, (_, i) => i),
    ...extra,
  };
}

function offer(pool: typeof hpc, roomCpus: number, headroomCpus: number): PoolOffer {
  return { name: pool.name, probe: pilotProbe(pool, 60), roomCpus, headroomCpus };
}

const cpus = (demand: ReturnType<typeof offerWork>) =>
  Object.fromEntries([...demand].map(([name, wanted]) => [name, wanted.cpus]));

describe("offerWork", () => {
  it.each([
    [
      "the first pool takes the work it can start pilots for",
      [job("a", 3)],
      [8, 8],
      [0, 0],
      { hpc: 3, cloud: 0 },
    ],
    [
      "an array at its throttle asks pilots only for the tasks it may start",
      [job("a", 10, { parallel: 4, liveTasks: 1 })],
      [8, 8],
      [0, 0],
      { hpc: 3, cloud: 0 },
    ],
    [
      "an array at its throttle asks for none",
      [job("a", 10, { parallel: 2, liveTasks: 2 }), job("b", 1)],
      [8, 8],
      [0, 0],
      { hpc: 1, cloud: 0 },
    ],
    [
      "room and pending pilots cover work before new pilots",
      [job("a", 3)],
      [8, 8],
      [2, 0],
      { hpc: 1, cloud: 0 },
    ],
    ["room in a later pool covers work too", [job("a", 3)], [8, 8], [0, 3], { hpc: 0, cloud: 0 }],
    [
      "a pool that starts no pilots now: its work goes on",
      [job("a", 3)],
      [0, 8],
      [0, 0],
      { hpc: 0, cloud: 3 },
    ],
    ["beyond the first pool's headroom: the next", [job("a", 5)], [4, 8], [0, 0], { hpc: 4, cloud: 1 }],
    ["nobody can start pilots: no demand", [job("a", 5)], [0, 0], [0, 0], { hpc: 0, cloud: 0 }],
  ])("%s", (_, jobs, headroom, room, expected) => {
    const demand = offerWork(
      jobs,
      [offer(hpc, room[0], headroom[0]), offer(cloud, room[1], headroom[1])],
      NOW,
    );
    expect(cpus(demand)).toStrictEqual(expected);
  });

  it("a job only another pool's pilots can run goes there, whatever the order", () => {
    const onlyCloud = job("c", 2, { requirements: compileExpression('host.pool == "cloud"') });
    expect(cpus(offerWork([onlyCloud], [offer(hpc, 0, 8), offer(cloud, 0, 8)], NOW))).toStrictEqual({
      hpc: 0,
      cloud: 2,
    });
  });

  it("a job with s3: inputs or URL outputs asks pilots for its work: a pilot runs this release's agent", () => {
    const fetched = job("u", 2, { transfers: ["s3-inputs", "url-outputs"] });
    expect(cpus(offerWork([fetched], [offer(hpc, 0, 8)], NOW))).toStrictEqual({ hpc: 2 });
    const later = job("v", 2, { transfers: ["a-transfer-of-a-later-release"] });
    expect(cpus(offerWork([later], [offer(hpc, 0, 8)], NOW))).toStrictEqual({ hpc: 0 });
  });

  it("a job run in place asks pilots only of a pool whose pilots share a folder holding its workdir", () => {
    const [lustre] = parsePoolsFile(
      "pools:\n  - {name: lustre, driver: slurm, slotsPerPilot: 2, shared: [/lustre]}\n",
    );
    const inPlace = job("w", 1, { workdir: "/lustre/run1" });
    expect(cpus(offerWork([inPlace], [offer(hpc, 0, 8), offer(lustre, 0, 8)], NOW))).toStrictEqual({
      hpc: 0,
      lustre: 1,
    });
    const elsewhere = job("x", 1, { workdir: "/data/run1" });
    expect(cpus(offerWork([elsewhere], [offer(hpc, 0, 8), offer(lustre, 0, 8)], NOW))).toStrictEqual({
      hpc: 0,
      lustre: 0,
    });
  });

  it("a task longer than a pilot's walltime, with no checkpoint, asks no pilot of that pool", () => {
    const long = job("l", 1, { expectedSeconds: 3000 });
    expect(cpus(offerWork([long], [offer(hpc, 0, 8), offer(cloud, 0, 8)], NOW))).toStrictEqual({
      hpc: 0,
      cloud: 1,
    });
    const moving = job("m", 1, { expectedSeconds: 3000, checkpoints: true });
    expect(cpus(offerWork([moving], [offer(hpc, 0, 8), offer(cloud, 0, 8)], NOW))).toStrictEqual({
      hpc: 1,
      cloud: 0,
    });
  });

  it("keeps the shortest queue wait a job asks for with the demand it makes", () => {
    const demand = offerWork(
      [job("a", 1, { maxQueueWaitSeconds: 120 }), job("b", 1, { maxQueueWaitSeconds: 30 }), job("c", 1)],
      [offer(hpc, 0, 8)],
      NOW,
    );
    expect(demand.get("hpc")).toStrictEqual({ cpus: 3, maxQueueWaitSeconds: 30 });
  });

  it("stops walking a huge array once every pool is full", () => {
    let walked = 0;
    const huge = job("h", 0, {
      *readyTasks() {
        for (let i = 0; i < 1_000_000; i++) {
          walked++;
          yield i;
        }
      },
    });
    expect(cpus(offerWork([huge], [offer(hpc, 2, 4)], NOW))).toStrictEqual({ hpc: 4 });
    expect(walked).toBeLessThanOrEqual(7);
  });
});

describe("pool join tokens", () => {
  const server = "the-servers-join-token";
  it("the server's token joins any pool; a pool's token its own pool only", () => {
    const token = poolJoinToken(server, "hpc");
    expect(token.startsWith("pool.hpc.")).toBe(true);
    expect(joinTokenScope(server, server)).toBe("any");
    expect(joinTokenScope(server, token)).toStrictEqual({ pool: "hpc" });
    expect(joinTokenScope(server, poolJoinToken(server, "cloud"))).toStrictEqual({ pool: "cloud" });
  });
  it.each([
    ["another server's pool token", poolJoinToken("another-server", "hpc")],
    [
      "a pool token renamed to another pool",
      poolJoinToken(server, "hpc").replace("pool.hpc.", "pool.cloud."),
    ],
    ["a made-up pool token", "pool.hpc.AAAA"],
    ["garbage", "pool."],
    ["an empty token", ""],
  ])("refuses %s", (_, token) => {
    expect(joinTokenScope(server, token)).toBeNull();
  });
});

describe("offerWork with tasks on the move", () => {
  it("a task migrating off a pilot (anywhere but its old host) asks for a new pilot; one sent to a named host does not", () => {
    const moving = job("m", 0, {
      *constrainedTasks() {
        yield { index: 0, allows: (host: string) => host !== "hpc-12" };
        yield { index: 1, allows: (host: string) => host === "hpc-13" };
      },
    });
    expect(cpus(offerWork([moving], [offer(hpc, 0, 8)], NOW))).toStrictEqual({ hpc: 1 });
  });
});

describe("offerWork with gangs", () => {
  it("a 3-rank gang asks for 3 whole pilots", () => {
    const gang = job("g", 1, { gang: { nodes: 3, nodesPerHost: 1, restartPool: null } });
    expect(cpus(offerWork([gang], [offer(hpc, 0, 8)], NOW))).toStrictEqual({ hpc: 6 });
  });
});

describe("offerWork under running limits", () => {
  it("work a user's running limit holds back asks for no pilot; another user's does", () => {
    const quotas = new RunningQuotas(parseQosFile("tiers: {normal: {maxRunningCpus: 2}}"), {
      byUserTier: new Map([[userTierKey("alice", "normal"), { cpus: 1, gpus: 0 }]]),
      byGroup: new Map(),
      groupOf: new Map(),
    });
    const demand = offerWork(
      [job("a", 5, { owner: "alice", qos: "normal" }), job("b", 1, { owner: "bob", qos: "normal" })],
      [offer(hpc, 0, 8), offer(cloud, 0, 8)],
      NOW,
      quotas,
    );
    // alice runs 1 of her 2 cpus: one more task of hers; bob's one task.
    expect(cpus(demand)).toStrictEqual({ hpc: 2, cloud: 0 });
  });
});
