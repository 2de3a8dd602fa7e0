// The sharing policy, pure: the QoS file's parser, who may preempt whom, the running limits, the
// submit checks, and the order of the queue (a job's priority orders its owner's own jobs only;
// between users the QoS tier, then fair share, then submit order), through the scheduler itself.

import { describe, expect, it } from "vitest";
import { explain } from "../../../../src/broker/scheduler/explain.ts";
import {
  heldBy,
  mayPreempt,
  RunningQuotas,
  runningLimitReached,
  userTierKey,
} from "../../../../src/broker/scheduler/qos.ts";
import { compareQueueOrder } from "../../../../src/broker/scheduler/queue-order.ts";
import { comesBefore } from "../../../../src/broker/scheduler/queue-position.ts";
import {
  type OwnerStanding,
  qosAccessRefusal,
  submitQuotaRefusal,
  timeLimitOf,
} from "../../../../src/broker/scheduler/quotas.ts";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import type {
  Held,
  HostView,
  JobView,
  RunningTaskView,
  SchedulerState,
} from "../../../../src/broker/scheduler/view.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import {
  DEFAULT_QOS_POLICY,
  parseQosFile,
  QosFileError,
  type QosPolicy,
  type QosTier,
} from "../../../../src/common/model/qos-file.ts";
import { renderStopReason } from "../../../../src/common/model/stop-reasons.ts";

const NOW = 10_000_000;

const POLICY: QosPolicy = parseQosFile(`
tiers:
  normal:
    maxRunningCpus: 2
    maxQueuedTasks: 100
    maxArrayTasks: 50
    maxWallSeconds: 3600
  high:
    priority: 10
    preempt: [normal]
  low:
    priority: -5
groups:
  physics:
    maxRunningCpus: 3
    maxQueuedTasks: 150
`);

describe("parseQosFile", () => {
  it("fills in defaults: priority 0, preempts nothing, no limits", () => {
    const policy = parseQosFile("tiers: {normal: {}}");
    expect(policy.tiers.get("normal")).toStrictEqual({
      priority: 0,
      preempt: [],
      maxRunningCpus: null,
      maxRunningGpus: null,
      maxQueuedTasks: null,
      maxArrayTasks: null,
      maxWallSeconds: null,
    } satisfies QosTier);
    expect(policy.groups.size).toBe(0);
    expect(DEFAULT_QOS_POLICY.tiers.get("normal")).toStrictEqual(policy.tiers.get("normal"));
  });

  it("reads tiers and groups", () => {
    expect([...POLICY.tiers.keys()]).toStrictEqual(["normal", "high", "low"]);
    expect(POLICY.tiers.get("high")).toMatchObject({ priority: 10, preempt: ["normal"] });
    expect(POLICY.tiers.get("normal")).toMatchObject({ maxRunningCpus: 2, maxWallSeconds: 3600 });
    expect(POLICY.groups.get("physics")).toStrictEqual({
      maxRunningCpus: 3,
      maxRunningGpus: null,
      maxQueuedTasks: 150,
      maxArrayTasks: null,
    });
  });

  it.each([
    ["no tiers", "groups: {}", "line 1: tiers: "],
    ["no normal tier", "tiers:\n  high: {priority: 1}", "line 2: tiers: must define normal"],
    [
      "an unknown key, on its line",
      "tiers:\n  normal:\n    priority: 0\n    maxJobs: 3",
      "line 4: tiers.normal.maxJobs: unknown key",
    ],
    ["a wrong type", "tiers:\n  normal:\n    priority: high", "line 3: tiers.normal.priority: "],
    [
      "a negative limit",
      "tiers:\n  normal:\n    maxQueuedTasks: -1",
      "line 3: tiers.normal.maxQueuedTasks: ",
    ],
    [
      "preempting an unknown tier",
      "tiers:\n  normal: {}\n  high:\n    priority: 5\n    preempt: [norm]",
      "line 5: tiers.high.preempt[0]: no tier norm (tiers: normal, high)",
    ],
    [
      "preempting a tier of the same priority",
      "tiers:\n  normal:\n    preempt: [other]\n  other: {}",
      "line 3: tiers.normal.preempt[0]: normal (priority 0) may only preempt tiers of a lower priority, and other has 0",
    ],
    [
      "a bad tier name",
      "tiers:\n  normal: {}\n  High: {}",
      "line 3: tiers.High: must be 1 to 63 lower-case letters",
    ],
    ["a bad group name", "tiers: {normal: {}}\ngroups:\n  -x: {}", "line 3: groups.-x: must be 1 to 63"],
    [
      "an unknown group key",
      "tiers: {normal: {}}\ngroups:\n  physics:\n    maxWallSeconds: 3",
      "line 4: groups.physics.maxWallSeconds: unknown key",
    ],
    ["not a mapping", "- normal", "line 1: a QoS file must be a mapping"],
    ["not YAML", "tiers: {normal: {}", "line 1: not valid YAML"],
  ])("refuses %s", (_, text, message) => {
    expect(() => parseQosFile(text)).toThrow(message);
  });

  it.each([
    [
      "YAML's first line of its message, without its own place, on a line past 9",
      `${"\n".repeat(11)}tiers: {normal: {}`,
      "line 12: not valid YAML: Flow map in block collection must be sufficiently indented and end with a }",
    ],
    ["an empty file is not a mapping", "", "line 1: a QoS file must be a mapping with a `tiers` map"],
    ["a number is not a mapping", "42", "line 1: a QoS file must be a mapping with a `tiers` map"],
    ["a list is not a mapping", "- normal", "line 1: a QoS file must be a mapping with a `tiers` map"],
    [
      "an unknown key before another problem, even when that one comes first",
      "tiers:\n  normal:\n    priority: x\n    maxJobs: 3",
      "line 4: tiers.normal.maxJobs: unknown key",
    ],
    [
      "an unknown key YAML reads as a number: the line of its mapping",
      "tiers:\n  normal:\n    1: x",
      "line 3: tiers.normal.1: unknown key",
    ],
    [
      "a bad value on the line of the value, not of its mapping",
      "tiers:\n  normal:\n    priority: 0\n    maxQueuedTasks: -1",
      "line 4: tiers.normal.maxQueuedTasks: Too small: expected number to be >=0",
    ],
  ])("refuses %s, with exactly this message", (_, text, message) => {
    let thrown: unknown;
    try {
      parseQosFile(text);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(QosFileError);
    expect((thrown as QosFileError).name).toBe("QosFileError");
    expect((thrown as QosFileError).message).toBe(message);
  });

  it.each<[string, string, number | null, string]>([
    ["a field and a line", "tiers.normal", 3, "line 3: tiers.normal: bad"],
    ["no field", "", 1, "line 1: bad"],
    ["no line", "tiers.normal", null, "tiers.normal: bad"],
    ["neither", "", null, "bad"],
  ])("a QosFileError's message: %s", (_, field, line, message) => {
    const error = new QosFileError(field, "bad", line);
    expect([error.message, error.field, error.name]).toEqual([message, field, "QosFileError"]);
  });
});

type Tiered = Pick<JobView, "owner" | "priority" | "qos" | "qosPriority">;
const alice = (priority: number, qos = "normal", qosPriority = 0): Tiered => ({
  owner: "alice",
  priority,
  qos,
  qosPriority,
});
const bob = (priority: number, qos = "normal", qosPriority = 0): Tiered => ({
  owner: "bob",
  priority,
  qos,
  qosPriority,
});

describe("mayPreempt", () => {
  it.each([
    ["the same user, higher priority", alice(5), alice(0), true],
    ["the same user, equal priority", alice(5), alice(5), false],
    ["the same user, lower priority", alice(0), alice(5), false],
    ["the same user, a higher tier", alice(0, "high", 10), alice(5), true],
    ["the same user, a higher tier that preempts no tier", alice(0), alice(5, "low", -5), true],
    ["the same user, a lower tier, a higher priority", alice(5), alice(0, "high", 10), false],
    ["another user, priority 1,000,000, the same tier", alice(1_000_000), bob(0), false],
    ["another user, a tier that preempts the victim's", alice(0, "high", 10), bob(1_000_000), true],
    ["another user, a higher tier that does not preempt it", alice(0, "high", 10), bob(0, "low", -5), false],
    ["another user, a lower tier", alice(0), bob(0, "high", 10), false],
    ["anonymous jobs are one owner", { priority: 5 }, { priority: 0 }, true],
  ])("%s: %s", (_, job, victim, expected) => {
    expect(mayPreempt(job, victim, POLICY)).toBe(expected);
  });
});

describe("runningLimitReached", () => {
  const limits = { maxRunningCpus: 4, maxRunningGpus: 1 };
  it.each([
    ["under", { cpus: 2, gpus: 0 }, { cpus: 2, gpus: 0 }, null],
    [
      "no limit",
      { cpus: 200, gpus: 0 },
      { cpus: 1, gpus: 0 },
      null,
      { maxRunningCpus: null, maxRunningGpus: null },
    ],
    [
      "at the cpus",
      { cpus: 4, gpus: 0 },
      { cpus: 1, gpus: 0 },
      "user alice is at the limit of 4 running CPUs (4 running, a task needs 1)",
    ],
    [
      "past the cpus with a big task",
      { cpus: 1, gpus: 0 },
      { cpus: 4, gpus: 0 },
      "user alice is at the limit of 4 running CPUs (1 running, a task needs 4)",
    ],
    [
      "at the gpus",
      { cpus: 0, gpus: 1 },
      { cpus: 1, gpus: 1 },
      "user alice is at the limit of 1 running GPUs (1 running, a task needs 1)",
    ],
    ["a task without gpus, at the gpus", { cpus: 0, gpus: 1 }, { cpus: 1, gpus: 0 }, null],
    ["a task without gpus, past the gpus", { cpus: 0, gpus: 2 }, { cpus: 1, gpus: 0 }, null],
  ])(
    "%s",
    (_, held: Held, adding: Held, expected, given?: {
      maxRunningCpus: number | null;
      maxRunningGpus: number | null;
    }) => {
      expect(runningLimitReached("user alice", held, adding, given ?? limits)).toBe(expected);
    },
  );

  it("counts what runs, what the pass placed, per user of a tier and per group", () => {
    const quotas = new RunningQuotas(POLICY, {
      byUserTier: new Map([[userTierKey("alice", "normal"), { cpus: 1, gpus: 0 }]]),
      byGroup: new Map([["physics", { cpus: 2, gpus: 0 }]]),
      groupOf: new Map([
        ["alice", "physics"],
        ["carol", "physics"],
      ]),
    });
    const task = (owner: string, qos = "normal") => ({ owner, qos, cpus: 1 });
    expect(quotas.held(task("alice"))).toBeNull();
    quotas.add(task("alice"));
    // alice: 2 running CPUs of normal, the tier's limit.
    expect(quotas.held(task("alice"))).toBe(
      "user alice is at the limit of 2 running CPUs of QoS normal (2 running, a task needs 1)",
    );
    // Another tier of hers has no limit but her group's: 3 CPUs, 3 held.
    expect(quotas.held(task("alice", "high"))).toBe(
      "group physics (of user alice) is at the limit of 3 running CPUs (3 running, a task needs 1)",
    );
    expect(quotas.held(task("carol", "high"))).toContain("group physics");
    expect(quotas.held(task("bob"))).toBeNull();
    expect(new RunningQuotas(DEFAULT_QOS_POLICY).held({ owner: "x", cpus: 1000 })).toBeNull();
  });

  it("holds every job of an owner whose group is at its cpu limit, and only then", () => {
    const quotas = new RunningQuotas(POLICY, {
      byUserTier: new Map(),
      byGroup: new Map([["physics", { cpus: 2, gpus: 0 }]]),
      groupOf: new Map([["alice", "physics"]]),
    });
    // physics: 2 of its 3 cpus run; bob has no group.
    expect([quotas.ownerHeld("alice"), quotas.ownerHeld("bob")]).toEqual([false, false]);
    quotas.add({ owner: "alice", qos: "high", cpus: 1 });
    expect([quotas.ownerHeld("alice"), quotas.ownerHeld("bob")]).toEqual([true, false]);
    // Every job of hers is held then, whatever its tier.
    for (const qos of ["normal", "high", "low"])
      expect(quotas.held({ owner: "alice", qos, cpus: 1 })).not.toBeNull();
    expect(new RunningQuotas(DEFAULT_QOS_POLICY).ownerHeld("alice")).toBe(false);
  });
});

describe("heldBy", () => {
  it.each<[string, Pick<JobView, "cpus" | "gpus" | "gang">, Held]>([
    ["one task", { cpus: 2 }, { cpus: 2, gpus: 0 }],
    ["one task with GPUs", { cpus: 2, gpus: 1 }, { cpus: 2, gpus: 1 }],
    [
      "a gang: every rank",
      { cpus: 2, gpus: 1, gang: { nodes: 3, nodesPerHost: 1, restartPool: null } },
      { cpus: 6, gpus: 3 },
    ],
    [
      "a gang of no ranks counts one",
      { cpus: 2, gang: { nodes: 0, nodesPerHost: 1, restartPool: null } },
      { cpus: 2, gpus: 0 },
    ],
  ])("%s", (_, job, expected) => {
    expect(heldBy(job)).toStrictEqual(expected);
  });
});

describe("RunningQuotas, case by case", () => {
  type Job = Pick<JobView, "owner" | "qos" | "cpus" | "gpus" | "gang">;
  const quotasOf = (text: string, groupOf: [string, string][] = [], byUserTier: [string, Held][] = []) =>
    new RunningQuotas(parseQosFile(text), {
      byUserTier: new Map(byUserTier.map(([owner, held]) => [userTierKey(owner, "normal"), held])),
      byGroup: new Map(),
      groupOf: new Map(groupOf),
    });

  it.each([
    [
      "a tier's CPUs",
      "tiers: {normal: {maxRunningCpus: 1}}",
      { owner: "alice", cpus: 2 },
      "user alice is at the limit of 1 running CPUs of QoS normal (0 running, a task needs 2)",
    ],
    [
      "a tier's GPUs",
      "tiers: {normal: {maxRunningGpus: 1}}",
      { owner: "alice", cpus: 1, gpus: 2 },
      "user alice is at the limit of 1 running GPUs of QoS normal (0 running, a task needs 2)",
    ],
    [
      "a group's CPUs",
      "tiers: {normal: {}}\ngroups: {physics: {maxRunningCpus: 1}}",
      { owner: "alice", cpus: 2 },
      "group physics (of user alice) is at the limit of 1 running CPUs (0 running, a task needs 2)",
    ],
    [
      "a group's GPUs",
      "tiers: {normal: {}}\ngroups: {physics: {maxRunningGpus: 1}}",
      { owner: "alice", cpus: 1, gpus: 2 },
      "group physics (of user alice) is at the limit of 1 running GPUs (0 running, a task needs 2)",
    ],
  ])("%s, the policy's only running limit, is checked", (_, text, job: Job, expected) => {
    expect(quotasOf(text, [["alice", "physics"]]).held(job)).toBe(expected);
  });

  it.each([
    [
      "its CPUs",
      { owner: "alice", cpus: 2, gpus: 1, gang: { nodes: 3, nodesPerHost: 1, restartPool: null } },
      "user alice is at the limit of 4 running CPUs of QoS normal (0 running, a task needs 6)",
    ],
    [
      "its GPUs",
      { owner: "alice", cpus: 1, gpus: 1, gang: { nodes: 3, nodesPerHost: 1, restartPool: null } },
      "user alice is at the limit of 2 running GPUs of QoS normal (0 running, a task needs 3)",
    ],
  ])("a gang needs every rank's share: %s", (_, job: Job, expected) => {
    expect(quotasOf("tiers: {normal: {maxRunningCpus: 4, maxRunningGpus: 2}}").held(job)).toBe(expected);
  });

  it("counts GPUs that run and GPUs the pass placed together", () => {
    const quotas = quotasOf("tiers: {normal: {maxRunningGpus: 3}}", [], [["alice", { cpus: 1, gpus: 1 }]]);
    quotas.add({ owner: "alice", qos: "normal", cpus: 1, gpus: 1 });
    expect(quotas.held({ owner: "alice", qos: "normal", cpus: 1, gpus: 2 })).toBe(
      "user alice is at the limit of 3 running GPUs of QoS normal (2 running, a task needs 2)",
    );
  });

  it("a job of no owner and no tier is the anonymous user's, in the default tier, held and added alike", () => {
    const quotas = quotasOf("tiers: {normal: {maxRunningCpus: 2}}");
    expect(quotas.held({ cpus: 3 })).toBe(
      "user (anonymous) is at the limit of 2 running CPUs of QoS normal (0 running, a task needs 3)",
    );
    quotas.add({ cpus: 1 });
    expect(quotas.held({ owner: "", qos: "normal", cpus: 2 })).toBe(
      "user (anonymous) is at the limit of 2 running CPUs of QoS normal (1 running, a task needs 2)",
    );
  });

  it("a group the policy sets no limits for holds nothing back", () => {
    const quotas = quotasOf("tiers: {normal: {maxRunningCpus: 4}}", [["alice", "chem"]]);
    expect([quotas.held({ owner: "alice", cpus: 1 }), quotas.ownerHeld("alice")]).toStrictEqual([
      null,
      false,
    ]);
  });

  it("the same user and tier with another need: worked out for that need", () => {
    const quotas = quotasOf("tiers: {normal: {maxRunningCpus: 1, maxRunningGpus: 1}}");
    const asked = [
      { cpus: 2, gpus: 0 },
      { cpus: 3, gpus: 0 },
      { cpus: 2, gpus: 0 },
      { cpus: 1, gpus: 2 },
      { cpus: 1, gpus: 3 },
      { cpus: 1, gpus: 2 },
    ].map((need) => quotas.held({ owner: "alice", qos: "normal", ...need }));
    const limit = (unit: string, needs: number) =>
      `user alice is at the limit of 1 running ${unit} of QoS normal (0 running, a task needs ${needs})`;
    expect(asked).toStrictEqual([
      limit("CPUs", 2),
      limit("CPUs", 3),
      limit("CPUs", 2),
      limit("GPUs", 2),
      limit("GPUs", 3),
      limit("GPUs", 2),
    ]);
  });

  it("a refusal stands for the rest of the pass: the same need of the same user and tier gets the same sentence", () => {
    const quotas = quotasOf(
      "tiers: {normal: {maxRunningCpus: 4}, high: {priority: 10, maxRunningCpus: 1}}",
      [],
      [["alice", { cpus: 2, gpus: 0 }]],
    );
    const first = quotas.held({ owner: "alice", qos: "normal", cpus: 3 });
    expect(first).toBe(
      "user alice is at the limit of 4 running CPUs of QoS normal (2 running, a task needs 3)",
    );
    expect(quotas.held({ owner: "alice", qos: "high", cpus: 2 })).toContain("of QoS high");
    // A smaller task of hers fits and is placed: what she holds grows, her refusal stays.
    expect(quotas.held({ owner: "alice", qos: "normal", cpus: 1 })).toBeNull();
    quotas.add({ owner: "alice", qos: "normal", cpus: 1 });
    expect(quotas.held({ owner: "alice", qos: "normal", cpus: 3 })).toBe(first);
  });
});

describe("submit checks", () => {
  const standing = (overrides: Partial<OwnerStanding> = {}): OwnerStanding => ({
    user: "alice",
    group: null,
    allowedQos: ["normal"],
    queuedTasks: 0,
    groupQueuedTasks: 0,
    ...overrides,
  });
  const spec = (job: Record<string, unknown>) => validateJobSpec({ command: "true", ...job });

  it.each([
    ["the default tier, allowed", {}, standing(), null],
    ["an allowed tier", { qos: "high" }, standing({ allowedQos: ["normal", "high"] }), null],
    ["an admin, any tier", { qos: "high" }, standing({ allowedQos: null }), null],
    [
      "a tier the token does not allow",
      { qos: "high" },
      standing(),
      { status: 400, field: "qos", message: "user alice may not use QoS high; their token allows normal" },
    ],
    [
      "an unknown tier",
      { qos: "gold" },
      standing({ allowedQos: null }),
      { status: 400, field: "qos", message: "no QoS tier gold; the tiers are normal, high, low" },
    ],
  ])("access: %s", (_, job, who, expected) => {
    expect(qosAccessRefusal(spec(job), who, POLICY)).toStrictEqual(expected);
  });

  it.each([
    ["under every limit", { array: { count: 10 } }, standing({ queuedTasks: 90 }), null],
    [
      "queued tasks over the tier's limit",
      { array: { count: 10 } },
      standing({ queuedTasks: 95 }),
      {
        status: 429,
        field: "qos",
        message:
          "user alice has 95 tasks queued (not ended) in QoS normal and the limit is 100; this job adds 10",
      },
    ],
    [
      "tasks per job over the tier's",
      { array: { count: 51 } },
      standing(),
      { status: 429, field: "array", message: "QoS normal allows 50 tasks per job, and this job has 51" },
    ],
    [
      "queued tasks over the group's",
      { qos: "high", array: { count: 20 } },
      standing({ group: "physics", groupQueuedTasks: 140 }),
      {
        status: 429,
        field: "qos",
        message: "group physics has 140 tasks queued (not ended) and the limit is 150; this job adds 20",
      },
    ],
    [
      "a tier without limits",
      { qos: "high", array: { count: 1000 } },
      standing({ queuedTasks: 10_000 }),
      null,
    ],
    [
      "a task larger than the tier's running limit",
      { resources: { cpus: 3 } },
      standing(),
      {
        status: 400,
        field: "resources",
        message:
          "a task of this job needs 3 CPUs and QoS normal allows a user 2 running: it could never start",
      },
    ],
    [
      "a gang larger than the group's running limit",
      { qos: "high", nodes: 2, resources: { cpus: 2 } },
      standing({ group: "physics" }),
      {
        status: 400,
        field: "resources",
        message: "a task of this job needs 4 CPUs and group physics allows 3 running: it could never start",
      },
    ],
    [
      "a time limit over the tier's",
      { timeLimitSeconds: 7200 },
      standing(),
      {
        status: 400,
        field: "timeLimitSeconds",
        message: "QoS normal allows a time limit of 3600 s at most, and the job asks for 7200 s",
      },
    ],
  ])("quota: %s", (_, job, who, expected) => {
    expect(submitQuotaRefusal(spec(job), who, POLICY)).toStrictEqual(expected);
  });

  it.each([
    ["a task exactly at the tier's running limit", { resources: { cpus: 2 } }, standing(), null],
    ["exactly the tier's tasks per job", { array: { count: 50 } }, standing(), null],
  ])("quota at its limit: %s", (_, job, who, expected) => {
    expect(submitQuotaRefusal(spec(job), who, POLICY)).toStrictEqual(expected);
  });

  // GPUs limited, and a group's tasks per job.
  const gpuPolicy = parseQosFile(`
tiers:
  normal:
    maxRunningGpus: 2
groups:
  bio:
    maxArrayTasks: 10
`);
  it.each([
    [
      "a gang whose ranks' GPUs together pass the tier's running limit",
      { nodes: 2, resources: { cpus: 1, gpus: 2 } },
      standing(),
      {
        status: 400,
        field: "resources",
        message:
          "a task of this job needs 4 GPUs and QoS normal allows a user 2 running: it could never start",
      },
    ],
    [
      "a task over the GPU limit",
      { resources: { cpus: 1, gpus: 3 } },
      standing(),
      {
        status: 400,
        field: "resources",
        message:
          "a task of this job needs 3 GPUs and QoS normal allows a user 2 running: it could never start",
      },
    ],
    ["a task at the GPU limit", { resources: { cpus: 1, gpus: 2 } }, standing(), null],
    [
      "tasks per job over the group's",
      { array: { count: 11 } },
      standing({ group: "bio" }),
      { status: 429, field: "array", message: "group bio allows 10 tasks per job, and this job has 11" },
    ],
    ["exactly the group's tasks per job", { array: { count: 10 } }, standing({ group: "bio" }), null],
    ["another group's limit does not apply", { array: { count: 11 } }, standing(), null],
  ])("quota with GPUs and groups: %s", (_, job, who, expected) => {
    expect(submitQuotaRefusal(spec(job), who, gpuPolicy)).toStrictEqual(expected);
  });

  it("a token that allows several tiers names each", () => {
    expect(
      qosAccessRefusal(spec({ qos: "high" }), standing({ allowedQos: ["normal", "low", "gold"] }), POLICY),
    ).toStrictEqual({
      status: 400,
      field: "qos",
      message: "user alice may not use QoS high; their token allows normal, low",
    });
  });

  it("a token that allows only tiers the policy does not have allows none of them", () => {
    expect(qosAccessRefusal(spec({ qos: "high" }), standing({ allowedQos: ["gold"] }), POLICY)).toStrictEqual(
      {
        status: 400,
        field: "qos",
        message: "user alice may not use QoS high; their token allows none of the tiers",
      },
    );
  });

  it.each([
    ["its own", 60, 3600, 60],
    ["none: the tier's", undefined, 3600, 3600],
    ["neither", undefined, null, undefined],
  ])("time limit: %s", (_, own, wall, expected) => {
    expect(timeLimitOf({ timeLimitSeconds: own }, { maxWallSeconds: wall })).toBe(expected);
  });
});

// ---- the queue, through the scheduler

function host(name: string, slots: number, slotsFree = slots): HostView {
  return {
    name,
    state: "ready",
    connected: true,
    slots,
    slotsFree,
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
      slotsFree,
    },
  };
}

function job(id: string, owner: string, extra: Partial<JobView> = {}, tasks = 1): JobView {
  return {
    id,
    owner,
    priority: 0,
    createdAt: Number(id.replace(/\D/g, "")),
    seq: Number(id.replace(/\D/g, "")),
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: null,
    qos: "normal",
    qosPriority: 0,
    *readyTasks() {
      for (let i = 0; i < tasks; i++) yield i;
    },
    ...extra,
  };
}

function running(id: string, owner: string, extra: Partial<RunningTaskView["job"]> = {}): RunningTaskView {
  return {
    job: {
      id,
      owner,
      priority: 0,
      cpus: 1,
      memoryMb: 0,
      requirements: null,
      rank: null,
      qos: "normal",
      qosPriority: 0,
      ...extra,
    },
    taskIndex: 0,
    attempt: 1,
    host: "h1",
    stopping: false,
    // Half done after an hour: an hour left, past the wait; a checkpoint: preemptible.
    progress: { startedAt: NOW - 3_600_000, baseline: null, last: { fraction: 0.5, at: NOW } },
    checkpointBytes: 100,
    startedByPreemption: false,
    lastMovedAt: null,
  };
}

function pass(jobs: JobView[], hosts: HostView[], more: Partial<SchedulerState> = {}): SchedulerState {
  return { now: NOW, jobs: [...jobs].sort(compareQueueOrder), hosts, qos: POLICY, ...more };
}

const starts = (state: SchedulerState) => schedule(state).place.map((p) => p.jobId);

describe("a job's priority orders its owner's own jobs only", () => {
  it("a priority of 1,000,000 does not overtake another user's job of the same tier", () => {
    // bob submitted first; alice's job, later, asks for 1,000,000: the one slot goes to bob.
    const jobs = [job("j1", "bob"), job("j2", "alice", { priority: 1_000_000 })];
    expect(starts(pass(jobs, [host("h1", 1)]))).toStrictEqual(["j1"]);
    const said = explain({
      now: NOW,
      job: jobs[1],
      hosts: [host("h1", 1)],
      queue: jobs,
      pass: pass(jobs, [host("h1", 1)]),
    });
    expect(said.nextPass.starts).toStrictEqual([]);
    expect(said.ahead.map((other) => other.id)).toStrictEqual(["j1"]);
  });

  it("it overtakes the same user's own jobs of lower priority", () => {
    const jobs = [job("j1", "alice"), job("j2", "bob"), job("j3", "alice", { priority: 1_000_000 })];
    // Two slots: bob's head was submitted before alice's (j3, her priority job, heads her lane):
    // bob's turn first, then alice's, which takes j3 before her own older j1.
    expect(starts(pass(jobs, [host("h1", 2)]))).toStrictEqual(["j2", "j3"]);
  });

  it("one user's own jobs: the higher QoS tier first, whatever the priorities", () => {
    // alice's normal job of priority 5, submitted first, and her high-tier job: one slot.
    const jobs = [job("j1", "alice", { priority: 5 }), job("j2", "alice", { qos: "high", qosPriority: 10 })];
    expect(starts(pass(jobs, [host("h1", 1)]))).toStrictEqual(["j2"]);
    expect(compareQueueOrder(jobs[1], jobs[0])).toBeLessThan(0);
  });

  it("between users, the higher QoS tier goes first, whatever the priorities", () => {
    const jobs = [
      job("j1", "bob", { priority: 1_000_000 }),
      job("j2", "alice", { qos: "high", qosPriority: 10 }),
    ];
    expect(starts(pass(jobs, [host("h1", 1)]))).toStrictEqual(["j2"]);
  });

  it("within a band, fair share, then submit order, never job priority", () => {
    const shares = new Map([
      ["alice", { runningCpus: 0, recentCpuSeconds: 0 }],
      ["bob", { runningCpus: 3, recentCpuSeconds: 0 }],
    ]);
    const jobs = [job("j1", "bob", { priority: 9 }), job("j2", "alice")];
    expect(starts(pass(jobs, [host("h1", 1)], { owners: shares }))).toStrictEqual(["j2"]);
  });

  it.each([
    [
      "a higher tier first",
      job("j9", "bob", { qosPriority: 10 }),
      job("j1", "alice", { priority: 99 }),
      true,
    ],
    ["the same owner: job priority", job("j9", "alice", { priority: 5 }), job("j1", "alice"), true],
    [
      "another owner, equal shares: submit order, not priority",
      job("j9", "bob", { priority: 5 }),
      job("j1", "alice"),
      false,
    ],
    [
      "another owner, equal shares: submit order",
      job("j1", "bob"),
      job("j9", "alice", { priority: 5 }),
      true,
    ],
  ])("comesBefore: %s", (_, a, b, expected) => {
    expect(comesBefore(a, b)).toBe(expected);
  });
});

describe("preemption between users goes by the QoS tiers", () => {
  const full = [host("h1", 1, 0)];

  it("a job of priority 1,000,000 does not preempt another user's job of the same tier", () => {
    const waiting = job("j2", "alice", { priority: 1_000_000 });
    const plan = schedule(pass([waiting], full, { running: () => [running("r1", "bob")] }));
    expect(plan.preempt).toStrictEqual([]);
    const said = explain({
      now: NOW,
      job: waiting,
      hosts: full,
      queue: [waiting],
      pass: pass([waiting], full, { running: () => [running("r1", "bob")] }),
    });
    expect(said.nextPass.line).toContain("no task it may preempt");
  });

  it("a higher-priority job preempts the same user's own lower-priority job", () => {
    const waiting = job("j2", "alice", { priority: 1_000_000 });
    const plan = schedule(pass([waiting], full, { running: () => [running("r1", "alice")] }));
    expect(plan.preempt.map((each) => [each.stop.jobId, each.place.jobId])).toStrictEqual([["r1", "j2"]]);
  });

  it("a job of a tier that preempts normal preempts another user's normal job", () => {
    const waiting = job("j2", "alice", { qos: "high", qosPriority: 10 });
    const plan = schedule(
      pass([waiting], full, { running: () => [running("r1", "bob", { priority: 1_000_000 })] }),
    );
    expect(plan.preempt.map((each) => [each.stop.jobId, each.place.jobId])).toStrictEqual([["r1", "j2"]]);
    expect(renderStopReason(plan.preempt[0].stop.intent.reason)).toBe(
      "preempted for job j2 (QoS high, priority 0)",
    );
    expect(plan.preempt[0].stop.note?.data).toMatchObject({ for: "j2", forQos: "high" });
  });

  it("the GrADS rules still hold: a task without a checkpoint is not preempted", () => {
    const waiting = job("j2", "alice", { qos: "high", qosPriority: 10 });
    const victim = { ...running("r1", "bob"), checkpointBytes: null };
    expect(schedule(pass([waiting], full, { running: () => [victim] })).preempt).toStrictEqual([]);
  });

  it("a job held back by a running limit preempts nothing", () => {
    const waiting = job("j2", "alice", { qos: "high", qosPriority: 10, cpus: 1 });
    const limited: QosPolicy = parseQosFile(
      "tiers: {normal: {}, high: {priority: 10, preempt: [normal], maxRunningCpus: 1}}",
    );
    const plan = schedule(
      pass([waiting], full, {
        qos: limited,
        running: () => [running("r1", "bob")],
        runningUse: {
          byUserTier: new Map([[userTierKey("alice", "high"), { cpus: 1, gpus: 0 }]]),
          byGroup: new Map(),
          groupOf: new Map(),
        },
      }),
    );
    expect(plan.preempt).toStrictEqual([]);
  });
});

describe("running limits hold jobs back", () => {
  it("a user at the tier's limit waits while others start; explain says so", () => {
    const jobs = [job("j1", "alice", {}, 3), job("j2", "bob", {}, 3)];
    const use = {
      byUserTier: new Map([[userTierKey("alice", "normal"), { cpus: 1, gpus: 0 }]]),
      byGroup: new Map<string, Held>(),
      groupOf: new Map<string, string>(),
    };
    const state = pass(jobs, [host("h1", 4)], { runningUse: use });
    // alice has 1 of her 2 CPUs: one more task of hers; bob's tier limit is 2 too.
    expect(starts(state).sort()).toStrictEqual(["j1", "j2", "j2"]);
    const said = explain({ now: NOW, job: jobs[0], hosts: state.hosts, queue: jobs, pass: state });
    expect(said.nextPass.line).toBe("the next pass starts task 0 on h1");
    const atLimit = pass(jobs, [host("h1", 4)], {
      runningUse: { ...use, byUserTier: new Map([[userTierKey("alice", "normal"), { cpus: 2, gpus: 0 }]]) },
    });
    expect(starts(atLimit)).toStrictEqual(["j2", "j2"]);
    // A held job is ahead of no one: carol's job waits behind bob's only.
    const carol = job("j3", "carol");
    const queue = [...jobs, carol];
    const full = pass(queue, [host("h1", 1)], { runningUse: atLimit.runningUse });
    expect(
      explain({ now: NOW, job: carol, hosts: full.hosts, queue, pass: full }).ahead.map((each) => each.id),
    ).toStrictEqual(["j2"]);
    expect(
      explain({ now: NOW, job: jobs[0], hosts: atLimit.hosts, queue: jobs, pass: atLimit }).nextPass.line,
    ).toBe(
      "the next pass does not start it: user alice is at the limit of 2 running CPUs of QoS normal (2 running, a task needs 1)",
    );
  });
});

describe("replicas count against the running limits", () => {
  it("an idle slot takes no replica for a user at the limit, and one for a user under it", () => {
    const replicated = (id: string, owner: string) =>
      job(id, owner, { replicas: 2, mayReplicate: (_task, live) => live < 2 }, 0);
    const alice = replicated("j1", "alice");
    const bob = replicated("j2", "bob");
    const state = pass([], [host("h1", 1, 0), host("h2", 1, 0), host("idle", 2)], {
      replicable: [
        { job: alice, taskIndex: 0, hosts: ["h1"] },
        { job: bob, taskIndex: 0, hosts: ["h2"] },
      ],
      runningUse: {
        byUserTier: new Map([
          [userTierKey("alice", "normal"), { cpus: 2, gpus: 0 }],
          [userTierKey("bob", "normal"), { cpus: 1, gpus: 0 }],
        ]),
        byGroup: new Map(),
        groupOf: new Map(),
      },
    });
    expect(schedule(state).place.map((p) => `${p.kind} ${p.jobId}`)).toStrictEqual(["replica j2"]);
  });

  it("a replica placed counts at once: a user one cpu under the limit gets one replica, not two", () => {
    const bob = job("j2", "bob", { replicas: 2, mayReplicate: (_task, live) => live < 2 }, 0);
    const state = pass([], [host("h1", 2, 0), host("idle", 2)], {
      replicable: [
        { job: bob, taskIndex: 0, hosts: ["h1"] },
        { job: bob, taskIndex: 1, hosts: ["h1"] },
      ],
      runningUse: {
        byUserTier: new Map([[userTierKey("bob", "normal"), { cpus: 1, gpus: 0 }]]),
        byGroup: new Map(),
        groupOf: new Map(),
      },
    });
    expect(schedule(state).place.map((p) => `${p.kind} ${p.jobId}/${p.taskIndex}`)).toStrictEqual([
      "replica j2/0",
    ]);
  });
});
