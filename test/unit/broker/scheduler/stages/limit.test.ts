// The limit stage: whether a job may place one more task (or its gang) in this pass, whatever hosts
// it may use: its user's running limits of its tier and its group's first, then its array's
// throttle, each counting what runs and what the pass has placed so far.

import { describe, expect, it } from "vitest";
import { userTierKey } from "../../../../../src/broker/scheduler/qos.ts";
import { type LimitReached, limit, PassLimits } from "../../../../../src/broker/scheduler/stages/limit.ts";
import type { JobView, RunningUse } from "../../../../../src/broker/scheduler/view.ts";
import { parseQosFile } from "../../../../../src/common/model/qos-file.ts";
import { jobView } from "../../../../helpers/scheduler-views.ts";

const POLICY = parseQosFile(`
tiers:
  normal:
    maxRunningCpus: 4
  batch:
    maxRunningGpus: 1
  free: {}
groups:
  physics:
    maxRunningCpus: 6
`);

/** Alice (group physics) runs 2 cpus of tier normal; bob (no group) nothing. */
const USE: RunningUse = {
  byUserTier: new Map([[userTierKey("alice", "normal"), { cpus: 2, gpus: 0 }]]),
  byGroup: new Map([["physics", { cpus: 2, gpus: 0 }]]),
  groupOf: new Map([["alice", "physics"]]),
};

const of = (owner: string, fields: Parameters<typeof jobView>[1] = {}): JobView =>
  jobView(`${owner}-job`, { owner, qos: "normal", ...fields });
const running = (reason: string): LimitReached => ({ limit: "running", reason });
const throttle = (reason: string): LimitReached => ({ limit: "throttle", reason });
const gang = { nodes: 3, nodesPerHost: 1, restartPool: null };

describe("limit", () => {
  it.each<[string, JobView[], JobView, LimitReached | null]>([
    ["a job under every limit", [], of("alice"), null],
    ["a tier without limits, a user of no group", [], of("bob", { qos: "free", cpus: 64 }), null],
    ["up to the user's limit of the tier", [], of("alice", { cpus: 2 }), null],
    [
      "past the user's limit of the tier, with what runs",
      [],
      of("alice", { cpus: 3 }),
      running("user alice is at the limit of 4 running CPUs of QoS normal (2 running, a task needs 3)"),
    ],
    [
      "past it with what the pass placed",
      [of("alice", { cpus: 2 })],
      of("alice"),
      running("user alice is at the limit of 4 running CPUs of QoS normal (4 running, a task needs 1)"),
    ],
    ["another user's placements count for nothing", [of("bob", { cpus: 4 })], of("alice", { cpus: 2 }), null],
    [
      "a gang counts every rank",
      [],
      of("bob", { cpus: 2, gang }),
      running("user bob is at the limit of 4 running CPUs of QoS normal (0 running, a task needs 6)"),
    ],
    [
      "the group's limit, the user's tiers together",
      [of("alice", { qos: "free", cpus: 3 })],
      of("alice", { qos: "free", cpus: 2 }),
      running("group physics (of user alice) is at the limit of 6 running CPUs (5 running, a task needs 2)"),
    ],
    [
      "gpus of a tier that limits them",
      [of("bob", { qos: "batch", gpus: 1 })],
      of("bob", { qos: "batch", gpus: 1 }),
      running("user bob is at the limit of 1 running GPUs of QoS batch (1 running, a task needs 1)"),
    ],
    ["an array under its throttle", [], of("bob", { parallel: 3, liveTasks: 2 }), null],
    [
      "an array at its throttle",
      [],
      of("bob", { parallel: 2, liveTasks: 2 }),
      throttle("2 of its tasks run, the most its array allows at once (parallel: 2)"),
    ],
    [
      "an array at its throttle with what the pass placed",
      [of("bob", { parallel: 3, liveTasks: 1 }), of("bob", { parallel: 3, liveTasks: 1 })],
      of("bob", { parallel: 3, liveTasks: 1 }),
      throttle(
        "1 of its tasks run and 2 start in this pass, the most its array allows at once (parallel: 3)",
      ),
    ],
    [
      "a running limit is told before the throttle",
      [],
      of("alice", { cpus: 3, parallel: 1, liveTasks: 1 }),
      running("user alice is at the limit of 4 running CPUs of QoS normal (2 running, a task needs 3)"),
    ],
    [
      "a gang has no throttle",
      [],
      of("bob", { gang: { ...gang, nodes: 2 }, parallel: 1, liveTasks: 1 }),
      null,
    ],
    [
      "a gang of one rank is a job of one host: its array's throttle holds it",
      [],
      of("bob", { gang: { ...gang, nodes: 1 }, parallel: 1, liveTasks: 1 }),
      throttle("1 of its tasks run, the most its array allows at once (parallel: 1)"),
    ],
  ])("%s", (_, placedBefore, job, expected) => {
    const limits = new PassLimits(POLICY, USE);
    for (const placed of placedBefore) limits.placed(placed);
    expect(limit(job, limits)).toStrictEqual(expected);
  });

  it("counts a gang's placement against the running limits only", () => {
    const limits = new PassLimits(POLICY, USE);
    const array = of("bob", { parallel: 1, liveTasks: 0, gang: { ...gang, nodes: 2 } });
    limits.placed(array);
    expect(limit({ ...array, gang: undefined }, limits)).toBeNull();
    expect(limit(of("bob", { cpus: 3 }), limits)).toStrictEqual(
      running("user bob is at the limit of 4 running CPUs of QoS normal (2 running, a task needs 3)"),
    );
  });

  it("holds nothing without a QoS policy or use", () => {
    const limits = new PassLimits();
    for (let i = 0; i < 100; i++) limits.placed(of("alice", { cpus: 64 }));
    expect(limit(of("alice", { cpus: 64 }), limits)).toBeNull();
  });
});
