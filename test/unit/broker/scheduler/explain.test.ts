// Explain: host by host through the feasibility stages, the failing clause named; how many hosts
// match and have room; the clauses tallied over the hosts; whom the job waits behind; its running
// tasks; and what the next pass, run dry, does for it, in the sentence the CLI prints.

import { describe, expect, it } from "vitest";
import { explain, explainHosts } from "../../../../src/broker/scheduler/explain.ts";
import type { OwnerShare } from "../../../../src/broker/scheduler/fair-share.ts";
import type { HostView, JobView, RunningTaskView } from "../../../../src/broker/scheduler/view.ts";
import { compileExpression } from "../../../../src/common/model/cel.ts";
import type { HostFacts } from "../../../../src/common/model/host-facts.ts";
import type { HostState } from "../../../../src/common/model/states.ts";
import { hostView, jobView, NOW, readyTasks, runningView } from "../../../helpers/scheduler-views.ts";

interface JobRow {
  id: string;
  priority?: number;
  seq?: number;
  owner?: string;
  cpus?: number;
  memoryMb?: number;
  requirements?: string;
  /** Ready now unless false (a task backing off). */
  ready?: boolean;
}

function job(row: JobRow): JobView {
  return {
    id: row.id,
    priority: row.priority ?? 0,
    createdAt: 0,
    seq: row.seq ?? Number(row.id.replace(/\D/g, "")),
    owner: row.owner,
    cpus: row.cpus ?? 1,
    memoryMb: row.memoryMb ?? 0,
    requirements: row.requirements ? compileExpression(row.requirements) : null,
    rank: null,
    *readyTasks() {
      if (row.ready !== false) yield 0;
    },
  };
}

interface HostRow {
  name: string;
  state?: HostState;
  connected?: boolean;
  slots?: number;
  slotsFree?: number;
  memoryFreeMb?: number;
  facts?: Partial<HostFacts>;
}

function host(row: HostRow): HostView {
  const slots = row.slots ?? 4;
  return {
    name: row.name,
    state: row.state ?? "ready",
    connected: row.connected ?? true,
    slots,
    slotsFree: row.slotsFree ?? slots,
    memoryFreeMb: row.memoryFreeMb ?? 8192,
    facts: {
      name: row.name,
      pool: "local",
      os: "linux",
      arch: "x86_64",
      cpus: slots,
      memoryMb: 8192,
      memFreeMb: 8000,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: 10_000,
      speed: 1,
      labels: {},
      slotsFree: row.slotsFree ?? slots,
      ...row.facts,
    },
  };
}

describe("explainHosts names the failing clause", () => {
  it.each([
    [
      "the false clause with the value it read",
      'host.arch == "x86_64" && host.memFreeMb >= 1e9',
      {},
      "requirements: host.memFreeMb >= 1e9 is false (host.memFreeMb = 8000)",
    ],
    [
      "every false clause",
      'host.arch == "arm64" && host.memFreeMb >= 1e9',
      {},
      'requirements: host.arch == "arm64" is false (host.arch = "x86_64"); host.memFreeMb >= 1e9 is false (host.memFreeMb = 8000)',
    ],
    [
      "a missing label among several clauses",
      'host.os == "linux" && host.labels.zone == "a"',
      {},
      'requirements: host.labels.zone == "a" cannot be evaluated: host has no label "zone"',
    ],
    [
      "a missing label as the only clause",
      'host.labels.zone == "a"',
      {},
      'requirements cannot be evaluated: host has no label "zone"',
    ],
    [
      "a false single clause as the requirements",
      'host.os == "darwin"',
      {},
      "requirements are false on this host",
    ],
    [
      "an || whole",
      'host.cpus >= 1.0 && (host.os == "darwin" || host.labels.tier == "gold")',
      { labels: { tier: "silver" } },
      'requirements: host.os == "darwin" || host.labels.tier == "gold" is false (host.os = "linux", host.labels.tier = "silver")',
    ],
  ] as const)("%s", (_case, requirements, facts, reason) => {
    const [only] = explainHosts(job({ id: "j", requirements }), [host({ name: "a", facts })]);
    expect(only).toEqual({ host: "a", eligible: false, reason });
  });

  it("says matches when every clause holds", () => {
    const [only] = explainHosts(
      job({ id: "j", requirements: 'host.arch == "x86_64" && host.memFreeMb >= 512.0' }),
      [host({ name: "a" })],
    );
    expect(only).toEqual({ host: "a", eligible: true, reason: "matches and has room" });
  });
});

describe("explain", () => {
  const hosts = [
    host({ name: "free" }),
    host({ name: "busy", slotsFree: 0 }),
    host({ name: "low-mem", memoryFreeMb: 100 }),
    host({ name: "arm", facts: { arch: "arm64" } }),
    host({ name: "gone", state: "lost" }),
    host({ name: "drain", state: "draining" }),
    host({ name: "off", connected: false }),
  ];

  it.each([
    [
      "every host that is up and x86_64 matches",
      'host.arch == "x86_64"',
      0,
      hosts,
      { matching: 3, withRoom: 2 },
    ],
    [
      "none with an impossible clause",
      'host.arch == "x86_64" && host.memFreeMb >= 1e9',
      0,
      hosts,
      { matching: 0, withRoom: 0 },
    ],
    ["all busy", 'host.arch == "x86_64"', 0, [hosts[1], hosts[1]], { matching: 2, withRoom: 0 }],
    ["memory counts toward room", null, 512, hosts, { matching: 4, withRoom: 2 }],
    ["none without hosts", null, 0, [], { matching: 0, withRoom: 0 }],
  ] as const)("sums up: %s", (_case, requirements, memoryMb, hostList, summary) => {
    const target = job({ id: "j", requirements: requirements ?? undefined, memoryMb });
    expect(explain({ now: NOW, job: target, hosts: hostList, queue: [target] }).summary).toEqual(summary);
  });

  it("tallies each clause over the hosts, with why it fails where it does", () => {
    const target = job({ id: "j", requirements: 'host.arch == "x86_64" && host.memFreeMb >= 1e9' });
    const { clauses } = explain({
      now: NOW,
      job: target,
      hosts: [host({ name: "a" }), host({ name: "b", facts: { arch: "arm64", memFreeMb: 100 } })],
      queue: [target],
    });
    expect(clauses).toEqual([
      {
        clause: 'host.arch == "x86_64"',
        matching: 1,
        failing: [{ host: "b", reason: 'is false (host.arch = "arm64")' }],
      },
      {
        clause: "host.memFreeMb >= 1e9",
        matching: 0,
        failing: [
          { host: "a", reason: "is false (host.memFreeMb = 8000)" },
          { host: "b", reason: "is false (host.memFreeMb = 100)" },
        ],
      },
    ]);
  });

  it("has no clause tally without requirements", () => {
    const target = job({ id: "j" });
    expect(explain({ now: NOW, job: target, hosts, queue: [target] }).clauses).toEqual([]);
  });

  const GOLD = 'host.labels.tier == "gold"';
  const mixed = [
    host({ name: "g", facts: { labels: { tier: "gold" } } }),
    host({ name: "s", facts: { labels: { tier: "silver" } } }),
  ];
  const shares = new Map<string, OwnerShare>([
    ["light", { runningCpus: 0, recentCpuSeconds: 0 }],
    ["heavy", { runningCpus: 8, recentCpuSeconds: 0 }],
  ]);

  it.each([
    [
      "jobs before it in submit order",
      [{ id: "1" }, { id: "2" }, { id: "3" }, { id: "4" }],
      "3",
      {},
      ["1", "2"],
    ],
    ["a higher priority submitted later", [{ id: "1" }, { id: "2", priority: 5 }], "1", {}, ["2"]],
    ["not a lower priority submitted earlier", [{ id: "1", priority: -1 }, { id: "2" }], "2", {}, []],
    [
      "only jobs that want a host it matches",
      [{ id: "1", requirements: 'host.name == "s"' }, { id: "2" }, { id: "3", requirements: GOLD }],
      "3",
      {},
      ["2"],
    ],
    ["not a job backing off", [{ id: "1", ready: false }, { id: "2" }], "2", {}, []],
    [
      "an owner with a smaller share, submitted later",
      [
        { id: "1", owner: "heavy" },
        { id: "2", owner: "heavy" },
        { id: "3", owner: "light" },
      ],
      "2",
      { owners: shares },
      ["3", "1"],
    ],
    [
      "not an owner with a larger share, submitted earlier",
      [
        { id: "1", owner: "heavy" },
        { id: "2", owner: "light" },
      ],
      "2",
      { owners: shares },
      [],
    ],
    [
      "nobody when the job matches no host",
      [{ id: "1" }, { id: "2", requirements: 'host.name == "x"' }],
      "2",
      {},
      [],
    ],
  ] as const)("puts it behind %s", (_case, rows, target, extra, expected) => {
    const queue = rows.map((row) => job({ ...row }));
    const me = queue.find((each) => each.id === target)!;
    const { ahead } = explain({ now: NOW, job: me, hosts: mixed, queue, ...extra });
    expect(ahead.map((each) => each.id)).toEqual(expected);
  });

  it("puts a job that is not in the queue (held, waiting) behind nobody", () => {
    const queue = [job({ id: "1" })];
    expect(explain({ now: NOW, job: job({ id: "2" }), hosts: mixed, queue }).ahead).toEqual([]);
  });

  it("says each running task has no estimate until rescheduling and preemption give one", () => {
    const target = job({ id: "j" });
    const { running } = explain({
      now: NOW,
      job: target,
      hosts,
      queue: [],
      running: [{ index: 0, attempt: 2, host: "free" }],
    });
    expect(running).toEqual([
      {
        task: 0,
        attempt: 2,
        host: "free",
        estimates: null,
        estimatedAt: null,
        preemption: null,
        line: "task 0 (attempt 2) runs on free: no rescheduling estimate yet; not assessed for preemption yet",
      },
    ]);
  });
});

describe("explain runs the next scheduling pass dry", () => {
  /** A running task half done in `startedAgo` s, with a checkpoint. */
  function runningTask(of: JobView, on: string, startedAgo: number): RunningTaskView {
    return {
      job: of,
      taskIndex: 0,
      attempt: 1,
      host: on,
      stopping: false,
      progress: { startedAt: NOW - startedAgo * 1000, baseline: null, last: { fraction: 0.5, at: NOW } },
      checkpointBytes: 1000,
      startedByPreemption: false,
      lastMovedAt: null,
    };
  }

  it("says the job starts, on the host the pass picks", () => {
    const target = job({ id: "j" });
    const hosts = [host({ name: "a", slotsFree: 1 }), host({ name: "b", slotsFree: 2 })];
    const answer = explain({ now: NOW, job: target, hosts, queue: [target] });
    expect(answer.nextPass).toEqual({
      starts: [{ task: 0, hosts: ["b"], replica: false }],
      preempts: null,
      line: "the next pass starts task 0 on b",
    });
    expect(answer.hosts.map((each) => each.reason)).toEqual([
      "matches and has room",
      "matches and has room: the job starts at the next pass",
    ]);
  });

  it("says a job behind another for the one free slot does not start, though the host has room", () => {
    const first = job({ id: "1" });
    const second = job({ id: "2" });
    const hosts = [host({ name: "a", slotsFree: 1 })];
    const answer = explain({ now: NOW, job: second, hosts, queue: [first, second] });
    expect(answer.summary).toEqual({ matching: 1, withRoom: 1 });
    expect(answer.hosts[0].reason).toBe("matches and has room");
    expect(answer.nextPass).toEqual({
      starts: [],
      preempts: null,
      line: "the next pass does not start it: the free room goes to work ahead of it",
    });
  });

  it("gives the pass's own reason when it gives up on the job", () => {
    const big = job({ id: "big", cpus: 4 });
    const hosts = [host({ name: "a", slotsFree: 2 })];
    expect(explain({ now: NOW, job: big, hosts, queue: [big] }).nextPass.line).toBe(
      "the next pass does not start it: no host it matches has room left in this pass",
    );
  });

  it("says the pass preempts a lower-priority task for it and keeps that room", () => {
    const high = job({ id: "high", priority: 10 });
    const low = job({ id: "low" });
    const hosts = [host({ name: "a", slots: 1, slotsFree: 0 })];
    const answer = explain({
      now: NOW,
      job: high,
      hosts,
      queue: [high],
      pass: { now: NOW, jobs: [high], hosts, running: () => [runningTask(low, "a", 1000)] },
    });
    expect(answer.nextPass).toEqual({
      starts: [],
      preempts: { task: 0, host: "a" },
      line: "the next pass stops a running task of lower priority on a and keeps its room for task 0",
    });
  });

  it("says the pass waits instead for a task about to end, and why", () => {
    const high = job({ id: "high", priority: 10 });
    const low = job({ id: "low" });
    const hosts = [host({ name: "a", slots: 1, slotsFree: 0 })];
    const answer = explain({
      now: NOW,
      job: high,
      hosts,
      queue: [high],
      pass: { now: NOW, jobs: [high], hosts, running: () => [runningTask(low, "a", 100)] },
    });
    expect(answer.nextPass.line).toBe(
      "the next pass does not start it: no host that takes work has a free slot; a running task that would make room for it ends soon: it waits for that",
    );
  });

  it("says room kept by a preemption waits for the stopped task", () => {
    const high = job({ id: "high", priority: 10 });
    const hosts = [host({ name: "a", slots: 1, slotsFree: 0 })];
    const reserved = [{ job: high, taskIndex: 0, host: "a", held: { slots: 0, memoryMb: 0 } }];
    const answer = explain({
      now: NOW,
      job: high,
      hosts,
      queue: [high],
      pass: { now: NOW, jobs: [high], hosts, reserved },
    });
    expect(answer.nextPass.line).toBe(
      "room on a is kept for task 0 (a preemption made it): it starts there once the stopped task has ended",
    );
  });

  it("gives each running task rescheduling's estimate as the pass weighs it", () => {
    const long = job({ id: "long", ready: false });
    const hosts = [
      host({ name: "slow", slots: 1, slotsFree: 0, facts: { speed: 5 } }),
      host({ name: "fast", slots: 1, slotsFree: 1, facts: { speed: 50 } }),
    ];
    const task = runningTask(long, "slow", 100);
    const answer = explain({
      now: NOW,
      job: long,
      hosts,
      queue: [],
      running: [{ index: 0, attempt: 1, host: "slow" }],
      pass: { now: NOW, jobs: [], hosts, running: () => [task] },
    });
    expect(answer.running[0].estimates).toEqual([{ host: "fast", gain: expect.closeTo(0.9, 6) }]);
    expect(answer.running[0].line).toMatch(
      /^task 0 \(attempt 1\) runs on slow: last rescheduling estimate 0 s ago: fast \+90 %/,
    );
  });
});

describe("explain: what tells one answer from another", () => {
  const free = (name: string, fields: Parameters<typeof hostView>[1] = {}) =>
    hostView(name, { slots: 1, ...fields });
  const full = (name: string, fields: Parameters<typeof hostView>[1] = {}) =>
    hostView(name, { slots: 1, slotsFree: 0, ...fields });

  it("a replica the pass starts is not the job starting: its host only matches and has room", () => {
    const replicated = jobView("r", { replicas: 2, ...readyTasks() });
    const hosts = [full("a"), free("b")];
    const replicable = [{ job: replicated, taskIndex: 0, hosts: ["a"] }];
    const answer = explain({
      now: NOW,
      job: replicated,
      hosts,
      queue: [],
      pass: { now: NOW, jobs: [], hosts, replicable },
    });
    expect(answer.nextPass).toStrictEqual({
      starts: [{ task: 0, hosts: ["b"], replica: true }],
      preempts: null,
      line: "the next pass starts a replica of task 0 on b",
    });
    expect(answer.hosts.map((each) => each.reason)).toStrictEqual([
      "busy: needs 1 free slots, 0 free",
      "matches and has room",
    ]);
  });

  it("names every start, and every host of a gang's", () => {
    const hosts = [free("a"), free("b", { slots: 2 })];
    const tasks = jobView("t", readyTasks(0, 1));
    expect(explain({ now: NOW, job: tasks, hosts, queue: [tasks] }).nextPass.line).toBe(
      "the next pass starts task 0 on b; task 1 on a",
    );
    const gang = jobView("g", { gang: { nodes: 2, nodesPerHost: 1, restartPool: null } });
    expect(explain({ now: NOW, job: gang, hosts, queue: [gang] }).nextPass.line).toBe(
      "the next pass starts task 0 on b, a",
    );
  });

  it("puts it behind a job that wants any one of the hosts it matches, with that job's owner", () => {
    const hosts = [hostView("g", { facts: { labels: { tier: "gold" } } }), hostView("s")];
    const queue = [
      jobView("1", { seq: 1, owner: "alice", requirements: 'host.labels.tier == "gold"' }),
      jobView("2", { seq: 2 }),
      jobView("3", { seq: 3, owner: "bob" }),
    ];
    const answer = explain({ now: NOW, job: queue[2], hosts, queue });
    expect(answer.ahead).toStrictEqual([
      { id: "1", priority: 0, owner: "alice" },
      { id: "2", priority: 0, owner: null },
    ]);
    expect(answer.running).toStrictEqual([]);
  });

  it.each<[string, boolean]>([
    ["alone", false],
    ["behind a job the pass gives up on", true],
  ])("says the pass places none of the tasks of a job whose turn comes with none ready: %s", (_, other) => {
    const target = jobView("j", { seq: 2, ...readyTasks() });
    const queue = other ? [jobView("big", { seq: 1, cpus: 16 }), target] : [target];
    expect(explain({ now: NOW, job: target, hosts: [free("a")], queue }).nextPass.line).toBe(
      "the next pass does not start it: the pass places none of its tasks",
    );
  });

  it("says nothing of another job's preemption, nor of room kept for another job", () => {
    const low = jobView("low");
    const other = jobView("other", { priority: 10, owner: "bob" });
    const target = jobView("j");
    const hosts = [full("a")];
    const reserved = [{ job: other, taskIndex: 0, host: "a", held: { slots: 0, memoryMb: 0 } }];
    const answer = explain({
      now: NOW,
      job: target,
      hosts,
      queue: [other, target],
      pass: { now: NOW, jobs: [other, target], hosts, reserved, running: () => [runningView(low, "a")] },
    });
    expect(answer.nextPass).toStrictEqual({
      starts: [],
      preempts: null,
      line: "the next pass does not start it: no host that takes work has a free slot",
    });
  });

  it("gives each running task the estimate of its own job's task, not another's of that index", () => {
    const long = jobView("long", readyTasks());
    const hosts = [
      full("slow", { facts: { speed: 5 } }),
      full("slower"),
      free("fast", { facts: { speed: 50 } }),
    ];
    const answer = explain({
      now: NOW,
      job: long,
      hosts,
      queue: [],
      running: [{ index: 0, attempt: 1, host: "slow" }],
      pass: {
        now: NOW,
        jobs: [],
        hosts,
        running: () => [runningView(long, "slow"), runningView(jobView("other"), "slower")],
      },
    });
    expect(answer.running[0].estimates).toStrictEqual([{ host: "fast", gain: expect.closeTo(0.9, 6) }]);
  });

  it.each<[string, boolean, boolean, string]>([
    [
      "a task ready, a free slot",
      true,
      true,
      "the next pass does not look at it: no task of it is queued ready to start",
    ],
    [
      "a task ready, no free slot",
      true,
      false,
      "the next pass does not start it: no host that takes work has a free slot",
    ],
    [
      "no task ready, no free slot",
      false,
      false,
      "the next pass does not look at it: no task of it is queued ready to start",
    ],
  ])("says why a job not in the pass is not started: %s", (_, ready, slot, line) => {
    const target = jobView("j", ready ? {} : readyTasks());
    const hosts = [slot ? free("a") : full("a")];
    expect(explain({ now: NOW, job: target, hosts, queue: [jobView("other")] }).nextPass.line).toBe(line);
  });

  it.each<[string, HostRow]>([
    ["a draining host's", { name: "a", state: "draining" }],
    ["a disconnected host's", { name: "a", connected: false }],
  ])("a free slot that is %s takes no work: a job not in the pass waits for one", (_, row) => {
    const target = jobView("j");
    expect(
      explain({ now: NOW, job: target, hosts: [host(row)], queue: [jobView("other")] }).nextPass.line,
    ).toBe("the next pass does not start it: no host that takes work has a free slot");
  });

  it("says the free room goes to work ahead when one host has a free slot and another none", () => {
    const first = jobView("1", { seq: 1 });
    const second = jobView("2", { seq: 2 });
    const hosts = [free("a"), full("b")];
    expect(explain({ now: NOW, job: second, hosts, queue: [first, second] }).nextPass.line).toBe(
      "the next pass does not start it: the free room goes to work ahead of it",
    );
  });

  it("names the first stage that rules a host out, whatever the requirements' clauses say there", () => {
    const target = jobView("j", { requirements: 'host.arch == "arm64" && host.cpus > 100' });
    const reasons = explainHosts(target, [hostView("gone", { state: "lost" }), hostView("x86")]);
    expect(reasons.map((each) => each.reason)).toStrictEqual([
      "host is lost",
      'requirements: host.arch == "arm64" is false (host.arch = "x86_64"); host.cpus > 100 is false (host.cpus = 4)',
    ]);
  });
});
