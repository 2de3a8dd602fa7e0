import { describe, expect, it } from "vitest";
import { explainHosts } from "../../../../src/broker/scheduler/explain.ts";
import type { Placement } from "../../../../src/broker/scheduler/plan.ts";
import { compareQueueOrder } from "../../../../src/broker/scheduler/queue-order.ts";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import { infeasibility } from "../../../../src/broker/scheduler/stages/feasibility.ts";
import { capacityShortfall, fitsCapacity } from "../../../../src/broker/scheduler/stages/fit.ts";
import type { HostView, JobView } from "../../../../src/broker/scheduler/view.ts";
import { compileExpression } from "../../../../src/common/model/cel.ts";
import type { HostFacts } from "../../../../src/common/model/host-facts.ts";
import type { HostState } from "../../../../src/common/model/states.ts";

const NOW = 1_000_000;

interface JobRow {
  id: string;
  priority?: number;
  createdAt?: number;
  seq?: number;
  cpus?: number;
  memoryMb?: number;
  requirements?: string;
  rank?: string;
  /** Task indexes, pending; a number alone is ready at once. */
  tasks?: (number | { index: number; notBefore: number | null })[];
}

function job(row: JobRow): JobView {
  const tasks = (row.tasks ?? [0]).map((task) =>
    typeof task === "number" ? { index: task, notBefore: null } : task,
  );
  return {
    id: row.id,
    priority: row.priority ?? 0,
    createdAt: row.createdAt ?? 0,
    seq: row.seq ?? 0,
    cpus: row.cpus ?? 1,
    memoryMb: row.memoryMb ?? 0,
    requirements: row.requirements ? compileExpression(row.requirements) : null,
    rank: row.rank ? compileExpression(row.rank) : null,
    *readyTasks(now: number) {
      for (const task of tasks) if (task.notBefore === null || task.notBefore <= now) yield task.index;
    },
  };
}

interface HostRow {
  name: string;
  state?: HostState;
  connected?: boolean;
  slots?: number;
  slotsFree?: number;
  memoryMb?: number;
  memoryFreeMb?: number;
  facts?: Partial<HostFacts>;
}

function host(row: HostRow): HostView {
  const slots = row.slots ?? 4;
  const slotsFree = row.slotsFree ?? slots;
  const memoryMb = row.memoryMb ?? 8192;
  return {
    name: row.name,
    state: row.state ?? "ready",
    connected: row.connected ?? true,
    slots,
    slotsFree,
    memoryFreeMb: row.memoryFreeMb ?? memoryMb,
    facts: {
      name: row.name,
      pool: "local",
      os: "linux",
      arch: "x86_64",
      cpus: slots,
      memoryMb,
      memFreeMb: memoryMb,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: 10_000,
      speed: 1,
      labels: {},
      slotsFree,
      ...row.facts,
    },
  };
}

/** Runs a pass over the jobs sorted in queue order, as the server does. */
function plan(jobs: JobRow[], hosts: HostRow[], now = NOW): Placement[] {
  const queue = jobs.map(job).sort(compareQueueOrder);
  return schedule({ now, jobs: queue, hosts: hosts.map(host) }).place;
}

/** Placements as "job/task@host" strings, in plan order. */
function short(placements: Placement[]): string[] {
  return placements.map((p) => `${p.jobId}/${p.taskIndex}@${p.host}`);
}

function perHost(placements: Placement[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const p of placements) counts[p.host] = (counts[p.host] ?? 0) + 1;
  return counts;
}

describe("compareQueueOrder", () => {
  const order = (rows: JobRow[]) =>
    rows
      .map(job)
      .sort(compareQueueOrder)
      .map((j) => j.id);

  it.each([
    [
      "higher priority first",
      [
        { id: "low", priority: 0, createdAt: 1 },
        { id: "high", priority: 5, createdAt: 2 },
        { id: "neg", priority: -1, createdAt: 0 },
      ],
      ["high", "low", "neg"],
    ],
    [
      "older first within a priority",
      [
        { id: "c", createdAt: 30 },
        { id: "a", createdAt: 10 },
        { id: "b", createdAt: 20 },
      ],
      ["a", "b", "c"],
    ],
    [
      "submission order within the same millisecond",
      [
        { id: "second", createdAt: 10, seq: 2 },
        { id: "third", createdAt: 10, seq: 3 },
        { id: "first", createdAt: 10, seq: 1 },
      ],
      ["first", "second", "third"],
    ],
    [
      "priority beats age, age beats seq",
      [
        { id: "old-low", priority: 0, createdAt: 1, seq: 1 },
        { id: "new-high", priority: 1, createdAt: 9, seq: 9 },
        { id: "mid-low-late-seq", priority: 0, createdAt: 5, seq: 0 },
        { id: "mid-low-early-seq", priority: 0, createdAt: 1, seq: 0 },
      ],
      ["new-high", "mid-low-early-seq", "old-low", "mid-low-late-seq"],
    ],
  ] as [string, JobRow[], string[]][])("%s", (_, rows, expected) => {
    expect(order(rows)).toEqual(expected);
  });

  it.each([
    [{ priority: 1, createdAt: 0, seq: 0 }, { priority: 0, createdAt: 0, seq: 0 }, -1],
    [{ priority: 0, createdAt: 0, seq: 0 }, { priority: 1, createdAt: 0, seq: 0 }, 1],
    [{ priority: 0, createdAt: 5, seq: 0 }, { priority: 0, createdAt: 6, seq: 0 }, -1],
    [{ priority: 0, createdAt: 5, seq: 2 }, { priority: 0, createdAt: 5, seq: 1 }, 1],
    [{ priority: 0, createdAt: 5, seq: 1 }, { priority: 0, createdAt: 5, seq: 1 }, 0],
  ])("%j vs %j has sign %d", (a, b, sign) => {
    expect(Math.sign(compareQueueOrder(a, b))).toBe(sign);
  });
});

describe("fitsCapacity and capacityShortfall", () => {
  it.each([
    [{ cpus: 1, memoryMb: 0 }, { slotsFree: 1, memoryFreeMb: 0 }, true, null],
    [{ cpus: 2, memoryMb: 0 }, { slotsFree: 1, memoryFreeMb: 1000 }, false, "needs 2 free slots, 1 free"],
    [{ cpus: 2, memoryMb: 512 }, { slotsFree: 2, memoryFreeMb: 512 }, true, null],
    [
      { cpus: 1, memoryMb: 513 },
      { slotsFree: 4, memoryFreeMb: 512 },
      false,
      "needs 513 MB, 512 MB unreserved",
    ],
    [{ cpus: 1, memoryMb: 0 }, { slotsFree: 0, memoryFreeMb: 512 }, false, "needs 1 free slots, 0 free"],
    [{ cpus: 1, memoryMb: 0 }, { slotsFree: -1, memoryFreeMb: 0 }, false, "needs 1 free slots, -1 free"],
  ])("%j in %j fits=%s", (need, capacity, fits, shortfall) => {
    expect(fitsCapacity(need, capacity)).toBe(fits);
    expect(capacityShortfall(need, capacity)).toBe(shortfall);
  });
});

describe("infeasibility", () => {
  it.each([
    ["a ready connected host", {}, { name: "h" }, null],
    ["a lost host", {}, { name: "h", state: "lost" }, "host is lost"],
    ["a draining host", {}, { name: "h", state: "draining" }, "host is draining"],
    ["a disconnected host", {}, { name: "h", connected: false }, "host agent is not connected"],
    [
      "more cpus than the host has slots",
      { cpus: 8 },
      { name: "h", slots: 4 },
      "job needs 8 cpus, host has 4 slots",
    ],
    [
      "more memory than the host has",
      { memoryMb: 9000 },
      { name: "h", memoryMb: 8192 },
      "job needs 9000 MB, host has 8192 MB",
    ],
    ["a busy host still feasible", { cpus: 4 }, { name: "h", slots: 4, slotsFree: 0, memoryFreeMb: 0 }, null],
    [
      "requirements false",
      { requirements: 'host.arch == "aarch64"' },
      { name: "h" },
      "requirements are false on this host",
    ],
    [
      "requirements true",
      { requirements: 'host.labels.tier == "gold"' },
      { name: "h", facts: { labels: { tier: "gold" } } },
      null,
    ],
  ] as [string, Omit<JobRow, "id">, HostRow, string | null][])("%s", (_, jobRow, hostRow, expected) => {
    expect(infeasibility(job({ id: "j", ...jobRow }), host(hostRow))).toBe(expected);
  });

  it("a missing label is infeasible with a reason naming the key", () => {
    const reason = infeasibility(
      job({ id: "j", requirements: 'host.labels.zone == "a"' }),
      host({ name: "h" }),
    );
    expect(reason).toMatch(/cannot be evaluated.*zone/);
  });
});

describe("schedule", () => {
  it("places nothing without jobs or without hosts", () => {
    expect(plan([], [{ name: "a" }])).toEqual([]);
    expect(plan([{ id: "j", tasks: [0, 1] }], [])).toEqual([]);
  });

  it("higher priority first: the single free slot goes to the higher-priority job", () => {
    const placements = plan(
      [
        { id: "low", priority: 0, createdAt: 1 },
        { id: "high", priority: 10, createdAt: 2 },
      ],
      [{ name: "a", slots: 1 }],
    );
    expect(short(placements)).toEqual(["high/0@a"]);
  });

  it.each([
    [
      "createdAt",
      [
        { id: "late", createdAt: 20 },
        { id: "early", createdAt: 10 },
      ],
      "early",
    ],
    [
      "seq",
      [
        { id: "second", createdAt: 10, seq: 2 },
        { id: "first", createdAt: 10, seq: 1 },
      ],
      "first",
    ],
  ] as [string, JobRow[], string][])("FIFO within a priority by %s", (_, jobs, winner) => {
    expect(plan(jobs, [{ name: "a", slots: 1 }]).map((p) => p.jobId)).toEqual([winner]);
  });

  it("places a job's tasks in the order readyTasks gives them", () => {
    const placements = plan([{ id: "arr", tasks: [3, 1, 2, 0] }], [{ name: "a", slots: 2 }]);
    expect(short(placements)).toEqual(["arr/3@a", "arr/1@a"]);
  });

  it("requirements filter hosts", () => {
    const placements = plan(
      [{ id: "j", tasks: [0, 1, 2], requirements: 'host.arch == "aarch64"' }],
      [
        { name: "x1", slots: 8 },
        { name: "arm", slots: 2, facts: { arch: "aarch64" } },
      ],
    );
    expect(short(placements)).toEqual(["j/0@arm", "j/1@arm"]);
  });

  it("a host without the label a requirement names is skipped, not an error", () => {
    const placements = plan(
      [{ id: "j", requirements: 'host.labels.tier == "gold"' }],
      [
        { name: "a", slots: 4 },
        { name: "b", slots: 1, facts: { labels: { tier: "gold" } } },
      ],
    );
    expect(short(placements)).toEqual(["j/0@b"]);
  });

  it("rank picks the highest-ranked host", () => {
    const placements = plan(
      [{ id: "j", rank: "host.speed" }],
      [
        { name: "a", slots: 8, facts: { speed: 1 } },
        { name: "b", slots: 1, facts: { speed: 5 } },
        { name: "c", slots: 8, facts: { speed: 3 } },
      ],
    );
    expect(short(placements)).toEqual(["j/0@b"]);
  });

  it("rank fills the best host first, then the next one", () => {
    const placements = plan(
      [{ id: "j", tasks: [0, 1, 2, 3], rank: 'host.name == "s2" ? 10 : 1' }],
      [
        { name: "s1", slots: 4 },
        { name: "s2", slots: 2 },
      ],
    );
    expect(short(placements)).toEqual(["j/0@s2", "j/1@s2", "j/2@s1", "j/3@s1"]);
  });

  it("a host where rank cannot be evaluated comes after hosts where it can", () => {
    const placements = plan(
      [{ id: "j", rank: "host.labels.zone == 'a' ? 1.0 : 0.0" }],
      [
        { name: "a", slots: 8 },
        { name: "b", slots: 1, facts: { labels: { zone: "b" } } },
      ],
    );
    expect(short(placements)).toEqual(["j/0@b"]);
  });

  it("among equal ranks, the host with more free slots (spread)", () => {
    const placements = plan(
      [{ id: "j", tasks: [0, 1, 2, 3] }],
      [
        { name: "a", slots: 4, slotsFree: 1 },
        { name: "b", slots: 4, slotsFree: 3 },
        { name: "c", slots: 4, slotsFree: 2 },
      ],
    );
    // b(3) -> b(2) ties c(2), name breaks it -> b(1), c(2) -> c(1): a(1) b(1) c(1) tie -> a.
    expect(short(placements)).toEqual(["j/0@b", "j/1@b", "j/2@c", "j/3@a"]);
  });

  it("spreads the tasks of an array evenly over equal hosts", () => {
    const placements = plan(
      [{ id: "j", tasks: [0, 1, 2, 3, 4, 5] }],
      [
        { name: "a", slots: 4 },
        { name: "b", slots: 4 },
        { name: "c", slots: 4 },
      ],
    );
    expect(perHost(placements)).toEqual({ a: 2, b: 2, c: 2 });
  });

  it("a 2-cpu job does not go to a host with 1 free slot", () => {
    const placements = plan(
      [{ id: "big", cpus: 2, tasks: [0, 1] }],
      [
        { name: "a", slots: 4, slotsFree: 1 },
        { name: "b", slots: 4, slotsFree: 3 },
      ],
    );
    expect(short(placements)).toEqual(["big/0@b"]);
  });

  it("memory is reserved as tasks are placed", () => {
    const placements = plan(
      [{ id: "m", memoryMb: 512, tasks: [0, 1, 2] }],
      [{ name: "a", slots: 8, memoryMb: 2048, memoryFreeMb: 1100 }],
    );
    expect(short(placements)).toEqual(["m/0@a", "m/1@a"]);
  });

  it("memory reserved by an earlier job counts against a later one", () => {
    const placements = plan(
      [
        { id: "first", memoryMb: 600, createdAt: 1 },
        { id: "second", memoryMb: 600, createdAt: 2 },
      ],
      [
        { name: "a", slots: 8, memoryMb: 1000 },
        { name: "b", slots: 1, memoryMb: 1000 },
      ],
    );
    expect(short(placements)).toEqual(["first/0@a", "second/0@b"]);
  });

  it("a job whose tasks fit nowhere does not block a later smaller job (backfill)", () => {
    const placements = plan(
      [
        { id: "big", priority: 5, cpus: 4, tasks: [0, 1] },
        { id: "small", priority: 0, cpus: 1, tasks: [0, 1, 2] },
      ],
      [
        { name: "a", slots: 4, slotsFree: 2 },
        { name: "b", slots: 4, slotsFree: 1 },
      ],
    );
    expect(placements.map((p) => p.jobId)).toEqual(["small", "small", "small"]);
    expect(perHost(placements)).toEqual({ a: 2, b: 1 });
  });

  it("a job infeasible everywhere does not block the jobs behind it", () => {
    const placements = plan(
      [
        { id: "gpu", priority: 9, requirements: 'host.labels.gpu == "yes"' },
        { id: "plain", priority: 0 },
      ],
      [{ name: "a", slots: 1 }],
    );
    expect(short(placements)).toEqual(["plain/0@a"]);
  });

  it("a job that fills some hosts leaves the rest for later jobs", () => {
    const placements = plan(
      [
        { id: "first", createdAt: 1, tasks: [0, 1, 2] },
        { id: "second", createdAt: 2, tasks: [0, 1, 2] },
      ],
      [
        { name: "a", slots: 2 },
        { name: "b", slots: 2 },
      ],
    );
    expect(placements.map((p) => p.jobId)).toEqual(["first", "first", "first", "second"]);
  });

  it.each([
    ["lost", { state: "lost" }],
    ["draining", { state: "draining" }],
    ["disconnected", { connected: false }],
  ] as [string, Partial<HostRow>][])("a %s host gets nothing", (_, overrides) => {
    const placements = plan(
      [{ id: "j", tasks: [0, 1, 2, 3] }],
      [
        { name: "bad", slots: 8, ...overrides },
        { name: "good", slots: 2 },
      ],
    );
    expect(short(placements)).toEqual(["j/0@good", "j/1@good"]);
  });

  it("only lost, draining or disconnected hosts: nothing is placed", () => {
    expect(
      plan(
        [{ id: "j" }],
        [
          { name: "a", state: "lost" },
          { name: "b", state: "draining" },
          { name: "c", connected: false },
        ],
      ),
    ).toEqual([]);
  });

  it("tasks with notBefore in the future are not placed", () => {
    const placements = plan(
      [
        {
          id: "j",
          tasks: [
            { index: 0, notBefore: NOW + 1 },
            { index: 1, notBefore: NOW },
            { index: 2, notBefore: NOW - 5000 },
            { index: 3, notBefore: null },
            { index: 4, notBefore: NOW + 60_000 },
          ],
        },
      ],
      [{ name: "a", slots: 8 }],
    );
    expect(placements.map((p) => p.taskIndex)).toEqual([1, 2, 3]);
  });

  it("passes its clock to readyTasks: a later pass places the backed-off task", () => {
    const rows: JobRow[] = [{ id: "j", tasks: [{ index: 0, notBefore: NOW + 5000 }] }];
    expect(plan(rows, [{ name: "a" }], NOW)).toEqual([]);
    expect(short(plan(rows, [{ name: "a" }], NOW + 5000))).toEqual(["j/0@a"]);
  });

  it("a job with no ready task places nothing and the next job still runs", () => {
    const placements = plan(
      [
        { id: "waiting", priority: 1, tasks: [{ index: 0, notBefore: NOW + 1 }] },
        { id: "ready", priority: 0 },
      ],
      [{ name: "a", slots: 1 }],
    );
    expect(short(placements)).toEqual(["ready/0@a"]);
  });

  it("places nothing when every slot is taken", () => {
    expect(plan([{ id: "j" }], [{ name: "a", slots: 4, slotsFree: 0 }])).toEqual([]);
  });

  it("a host over-committed (negative free slots) gets nothing and does not hide others' slots", () => {
    const placements = plan(
      [{ id: "j", tasks: [0, 1] }],
      [
        { name: "a", slots: 2, slotsFree: -2 },
        { name: "b", slots: 2, slotsFree: 1 },
      ],
    );
    expect(short(placements)).toEqual(["j/0@b"]);
  });

  it.each([
    [
      [{ id: "j", tasks: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] }],
      [
        { name: "a", slotsFree: 3 },
        { name: "b", slotsFree: 2 },
      ],
    ],
    [
      [
        { id: "two", cpus: 2, tasks: [0, 1, 2, 3] },
        { id: "one", cpus: 1, tasks: [0, 1, 2, 3, 4, 5, 6] },
      ],
      [
        { name: "a", slots: 4, slotsFree: 3 },
        { name: "b", slots: 4, slotsFree: 4 },
        { name: "c", slots: 2, slotsFree: 1 },
      ],
    ],
    [
      [
        { id: "three", cpus: 3, priority: 2, tasks: [0, 1] },
        { id: "one", cpus: 1, tasks: [0, 1, 2, 3, 4, 5, 6, 7] },
      ],
      [
        { name: "a", slots: 4, slotsFree: 4 },
        { name: "b", slots: 4, slotsFree: 2, state: "draining" },
        { name: "c", slots: 8, slotsFree: 2 },
      ],
    ],
  ] as [JobRow[], HostRow[]][])("placements never exceed free slots (case %#)", (jobs, hosts) => {
    const placements = plan(jobs, hosts);
    const cpus = new Map(jobs.map((j) => [j.id, j.cpus ?? 1]));
    const used: Record<string, number> = {};
    for (const p of placements) used[p.host] = (used[p.host] ?? 0) + cpus.get(p.jobId)!;
    const free = Object.fromEntries(
      hosts.filter((h) => (h.state ?? "ready") === "ready").map((h) => [h.name, h.slotsFree ?? h.slots ?? 4]),
    );
    for (const [name, n] of Object.entries(used)) expect(n).toBeLessThanOrEqual(free[name]);
    const totalFree = Object.values(free).reduce((a, b) => a + b, 0);
    const totalUsed = Object.values(used).reduce((a, b) => a + b, 0);
    expect(totalUsed).toBeLessThanOrEqual(totalFree);
    // Each pair (job, task) is placed at most once.
    expect(new Set(short(placements).map((s) => s.split("@")[0])).size).toBe(placements.length);
  });

  it.each<[string, HostRow[], string[]]>([
    ["the room a preemption kept goes to its task", [{ name: "a", slots: 1, slotsFree: 0 }], ["kept/0@a"]],
    [
      "before the queue's turns, which take the slots still free",
      [
        { name: "a", slots: 1, slotsFree: 0 },
        { name: "b", slots: 1, slotsFree: 1 },
      ],
      ["kept/0@a", "first/0@b"],
    ],
  ])("%s", (_, hosts, expected) => {
    const kept = job({ id: "kept" });
    const reserved = [{ job: kept, taskIndex: 0, host: "a", held: { slots: 1, memoryMb: 0 } }];
    const queue = [job({ id: "first", priority: 5 })];
    expect(short(schedule({ now: NOW, jobs: queue, hosts: hosts.map(host), reserved }).place)).toEqual(
      expected,
    );
  });

  it("fills every free slot when there is enough 1-cpu work", () => {
    const placements = plan(
      [{ id: "j", tasks: Array.from({ length: 20 }, (_, i) => i) }],
      [
        { name: "a", slots: 4, slotsFree: 3 },
        { name: "b", slots: 4, slotsFree: 4 },
      ],
    );
    expect(placements).toHaveLength(7);
    expect(perHost(placements)).toEqual({ a: 3, b: 4 });
  });

  it("does not ask a job for ready tasks once every slot is planned", () => {
    let asked = 0;
    const lazy: JobView = {
      ...job({ id: "lazy" }),
      *readyTasks() {
        for (let index = 0; index < 1000; index++) {
          asked++;
          yield index;
        }
      },
    };
    const placements = schedule({
      now: NOW,
      jobs: [lazy],
      hosts: [host({ name: "a", slots: 2 })],
    }).place;
    expect(placements).toHaveLength(2);
    expect(asked).toBe(2);
  });
});

describe("explainHosts", () => {
  it("gives a reason host by host", () => {
    const explanation = explainHosts(job({ id: "j", cpus: 2, requirements: 'host.os == "linux"' }), [
      host({ name: "free", slots: 4 }),
      host({ name: "busy", slots: 4, slotsFree: 1 }),
      host({ name: "full-mem", slots: 4, memoryFreeMb: 100 }),
      host({ name: "mac", facts: { os: "darwin" } }),
      host({ name: "gone", state: "lost" }),
      host({ name: "drain", state: "draining" }),
      host({ name: "off", connected: false }),
      host({ name: "tiny", slots: 1 }),
    ]);
    expect(explanation).toEqual([
      { host: "free", eligible: true, reason: "matches and has room" },
      { host: "busy", eligible: true, reason: "busy: needs 2 free slots, 1 free" },
      { host: "full-mem", eligible: true, reason: "matches and has room" },
      { host: "mac", eligible: false, reason: "requirements are false on this host" },
      { host: "gone", eligible: false, reason: "host is lost" },
      { host: "drain", eligible: false, reason: "host is draining" },
      { host: "off", eligible: false, reason: "host agent is not connected" },
      { host: "tiny", eligible: false, reason: "job needs 2 cpus, host has 1 slots" },
    ]);
  });

  it("says busy when memory is all reserved", () => {
    const [only] = explainHosts(job({ id: "j", memoryMb: 512 }), [host({ name: "a", memoryFreeMb: 100 })]);
    expect(only).toEqual({ host: "a", eligible: true, reason: "busy: needs 512 MB, 100 MB unreserved" });
  });

  it("says why a missing label rules the host out", () => {
    const [only] = explainHosts(job({ id: "j", requirements: 'host.labels.zone == "a"' }), [
      host({ name: "a" }),
    ]);
    expect(only.eligible).toBe(false);
    expect(only.reason).toMatch(/^requirements cannot be evaluated: .*zone/);
  });

  it("is empty without hosts", () => {
    expect(explainHosts(job({ id: "j" }), [])).toEqual([]);
  });
});
