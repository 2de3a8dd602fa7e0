// Explain and the scheduler agree: over random cluster states (hosts up and down, busy and free,
// jobs of several owners, QoS tiers (with preemption between tiers and running limits per user and
// group), priorities, sizes, requirements, gangs, replicas, running tasks that
// preemption and rescheduling may stop, room kept by earlier preemptions), whenever explain says
// a job starts at the next pass, the scheduler's plan for that state starts it, on the same hosts,
// and the other way round; and explain names a preemption for a job exactly when the plan makes
// one. Pure: no store, no timers, a fixed clock; the seed of a state that disagrees is printed.

import { describe, expect, it } from "vitest";
import { explain } from "../../../../src/broker/scheduler/explain.ts";
import type { OwnerShare } from "../../../../src/broker/scheduler/fair-share.ts";
import { hostsOfPlacement } from "../../../../src/broker/scheduler/plan.ts";
import { userTierKey } from "../../../../src/broker/scheduler/qos.ts";
import { compareQueueOrder } from "../../../../src/broker/scheduler/queue-order.ts";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import type {
  Held,
  HostView,
  JobView,
  ReservedRoom,
  RunningTask,
  RunningTaskView,
  SchedulerState,
} from "../../../../src/broker/scheduler/view.ts";
import { compileExpression } from "../../../../src/common/model/cel.ts";
import type { HostFacts } from "../../../../src/common/model/host-facts.ts";
import type { QosPolicy } from "../../../../src/common/model/qos-file.ts";
import type { HostState } from "../../../../src/common/model/states.ts";

const NOW = 100_000_000;
const STATES = 1000;
/** Change to explore other states; a failure prints the seed of the state to replay. */
const FIRST_SEED = 20_261_127;

/** mulberry32: a small seeded generator, the same numbers for the same seed everywhere. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  const chance = (p: number) => next() < p;
  return { int, pick, chance };
}

type Random = ReturnType<typeof generator>;

const REQUIREMENTS = [
  null,
  null,
  'host.arch == "x86_64"',
  'host.labels.tier == "gold"',
  "host.memoryMb >= 4096.0",
  'host.arch == "arm64" || host.speed >= 20.0',
].map((source) => (source === null ? null : compileExpression(source)));
const RANKS = [null, null, compileExpression("host.speed")].map((rank) => rank);
const OWNERS = ["alice", "bob", "carol"];
/** `high` preempts `normal`; `scavenger` is below both; running limits per user of a tier and per group. */
const TIERS = [
  ["normal", 0],
  ["normal", 0],
  ["high", 10],
  ["scavenger", -5],
] as const;
function randomQos(random: Random): QosPolicy {
  const limit = () => (random.chance(0.3) ? random.int(1, 4) : null);
  const tier = (priority: number, preempt: string[]) => ({
    priority,
    preempt,
    maxRunningCpus: limit(),
    maxRunningGpus: null,
    maxQueuedTasks: null,
    maxArrayTasks: null,
    maxWallSeconds: null,
  });
  return {
    tiers: new Map([
      ["normal", tier(0, random.chance(0.5) ? ["scavenger"] : [])],
      ["high", tier(10, ["normal", "scavenger"])],
      ["scavenger", tier(-5, [])],
    ]),
    groups: new Map([
      [
        "physics",
        { maxRunningCpus: limit(), maxRunningGpus: null, maxQueuedTasks: null, maxArrayTasks: null },
      ],
    ]),
  };
}

function randomHost(random: Random, index: number): HostView {
  const name = `h${index}`;
  const slots = random.int(1, 4);
  const memoryMb = random.pick([2048, 4096, 8192]);
  const state: HostState = random.chance(0.85) ? "ready" : random.pick(["draining", "lost"] as const);
  const slotsFree = random.chance(0.1) ? -1 : random.int(0, slots);
  const facts: HostFacts = {
    name,
    pool: random.chance(0.15) ? "spares" : "default",
    os: "linux",
    arch: random.chance(0.8) ? "x86_64" : "arm64",
    cpus: slots,
    memoryMb,
    memFreeMb: memoryMb,
    load1: 0,
    cpuFree: 1,
    diskFreeMb: 10_000,
    speed: random.pick([1, 5, 10, 30, 50]),
    labels: { tier: random.pick(["gold", "silver"]) },
    slotsFree: Math.max(0, slotsFree),
  };
  return {
    name,
    state,
    connected: random.chance(0.9),
    slots,
    slotsFree,
    memoryFreeMb: random.chance(0.1) ? random.int(0, 1024) : memoryMb,
    facts,
  };
}

function randomJob(random: Random, index: number): JobView {
  const tasks = Array.from({ length: random.int(1, 3) }, (_, task) => task).filter(() => random.chance(0.8));
  const gang = random.chance(0.15);
  const replicas = !gang && random.chance(0.15) ? 2 : 1;
  const createdAt = NOW - random.int(0, 1000) * 1000;
  const migrating = !gang && random.chance(0.1) ? random.int(5, 6) : null;
  const migrateTo = `h${random.int(0, 5)}`;
  const [qos, qosPriority] = random.pick(TIERS);
  return {
    id: `j${index}`,
    priority: random.pick([0, 0, 5, 10, 1_000_000]),
    createdAt,
    seq: index,
    owner: random.pick(OWNERS),
    qos,
    qosPriority,
    cpus: random.pick([1, 1, 2, 3]),
    memoryMb: random.pick([0, 512, 4096]),
    requirements: random.pick(REQUIREMENTS),
    rank: random.pick(RANKS),
    slowHosts: random.chance(0.1) ? [`h${random.int(0, 5)}`] : [],
    *readyTasks() {
      yield* gang ? tasks.slice(0, 1) : tasks;
    },
    ...(migrating === null
      ? {}
      : {
          *constrainedTasks() {
            yield { index: migrating, allows: (host: string) => host === migrateTo };
          },
        }),
    ...(gang
      ? {
          gang: {
            nodes: random.int(2, 3),
            nodesPerHost: random.pick([1, 1, 2]),
            restartPool: random.chance(0.3) ? "spares" : null,
          },
        }
      : {}),
    readySince: createdAt,
    replicas,
    mayReplicate: (_task, live) => live < replicas,
  };
}

function randomRunning(random: Random, hosts: readonly HostView[], index: number): RunningTaskView {
  const startedAgo = random.int(10, 5000) * 1000;
  const reported = random.chance(0.85);
  const [qos, qosPriority] = random.pick(TIERS);
  return {
    job: {
      id: `r${index}`,
      priority: random.pick([0, 0, 5]),
      owner: random.pick(OWNERS),
      qos,
      qosPriority,
      cpus: random.pick([1, 2]),
      memoryMb: random.pick([0, 512]),
      requirements: random.pick(REQUIREMENTS),
      rank: random.pick(RANKS),
    },
    taskIndex: 0,
    attempt: random.int(1, 3),
    host: random.pick(hosts).name,
    stopping: random.chance(0.1),
    progress: {
      startedAt: NOW - startedAgo,
      baseline: null,
      last: reported ? { fraction: random.int(1, 99) / 100, at: NOW - random.int(0, 10) * 1000 } : null,
    },
    checkpointBytes: random.chance(0.8) ? random.int(1, 1_000_000_000) : null,
    startedByPreemption: random.chance(0.1),
    lastMovedAt: random.chance(0.1) ? NOW - random.int(0, 120) * 1000 : null,
  };
}

function randomState(seed: number): SchedulerState {
  const random = generator(seed);
  const hosts = Array.from({ length: random.int(1, 6) }, (_, i) => randomHost(random, i));
  const jobs = Array.from({ length: random.int(0, 8) }, (_, i) => randomJob(random, i)).sort(
    compareQueueOrder,
  );
  const running = Array.from({ length: random.int(0, 5) }, (_, i) => randomRunning(random, hosts, i));
  const owners = new Map<string, OwnerShare>(
    OWNERS.map((owner) => [
      owner,
      { runningCpus: random.int(0, 8), recentCpuSeconds: random.int(0, 10_000) },
    ]),
  );
  const replicable: RunningTask[] = jobs
    .filter((job) => job.replicas === 2 && random.chance(0.5))
    .map((job) => ({ job, taskIndex: 9, hosts: [random.pick(hosts).name] }));
  const reserved: ReservedRoom[] = [];
  const waiting = jobs.filter((job) => !job.gang && [...job.readyTasks(NOW)].length > 0);
  if (waiting.length > 0 && random.chance(0.2)) {
    const job = random.pick(waiting);
    const held = random.chance(0.5) ? { slots: job.cpus, memoryMb: job.memoryMb } : { slots: 0, memoryMb: 0 };
    reserved.push({ job, taskIndex: [...job.readyTasks(NOW)][0], host: random.pick(hosts).name, held });
  }
  const qos = randomQos(random);
  const groupOf = new Map(OWNERS.filter(() => random.chance(0.5)).map((owner) => [owner, "physics"]));
  const byUserTier = new Map<string, Held>();
  const byGroup = new Map<string, Held>();
  for (const task of running) {
    const key = userTierKey(task.job.owner ?? "", task.job.qos ?? "normal");
    const held = byUserTier.get(key) ?? { cpus: 0, gpus: 0 };
    byUserTier.set(key, { cpus: held.cpus + task.job.cpus, gpus: 0 });
    const group = groupOf.get(task.job.owner ?? "");
    if (group) byGroup.set(group, { cpus: (byGroup.get(group)?.cpus ?? 0) + task.job.cpus, gpus: 0 });
  }
  return {
    now: NOW,
    jobs,
    hosts,
    owners,
    qos,
    runningUse: { byUserTier, byGroup, groupOf },
    replicable,
    ...(reserved.length > 0 ? { reserved } : {}),
    ...(running.length > 0 || random.chance(0.5) ? { running: () => running } : {}),
    policy: {
      preempt: random.chance(0.8),
      reschedule: random.chance(0.8),
      gangReserveSeconds: random.pick([0, 300]),
      preemptWaitSeconds: random.pick([0, 300]),
    },
  };
}

/** `task@host+host` for each placement of the job, in plan order. */
function startsIn(plan: ReturnType<typeof schedule>, jobId: string): string[] {
  return plan.place
    .filter((placement) => placement.jobId === jobId)
    .map((placement) => `${placement.taskIndex}@${hostsOfPlacement(placement).join("+")}`);
}

describe("explain agrees with the scheduler", () => {
  it(`over ${STATES} random cluster states`, () => {
    let jobsSeen = 0;
    let started = 0;
    let preempted = 0;
    let limited = 0;
    for (let seed = FIRST_SEED; seed < FIRST_SEED + STATES; seed++) {
      const state = randomState(seed);
      const plan = schedule(state);
      const queue = [...state.jobs];
      const jobs = new Map<string, JobView>();
      for (const job of queue) jobs.set(job.id, job);
      for (const task of state.replicable ?? []) jobs.set(task.job.id, task.job);
      for (const job of jobs.values()) {
        jobsSeen++;
        const { nextPass } = explain({
          now: NOW,
          job,
          hosts: state.hosts,
          queue,
          owners: state.owners,
          pass: state,
        });
        const said = nextPass.starts.map((each) => `${each.task}@${each.hosts.join("+")}`);
        const scheduled = startsIn(plan, job.id);
        const where = `seed ${seed}, job ${job.id}: explain says "${nextPass.line}"`;
        expect(said.length > 0, where).toBe(scheduled.length > 0);
        expect(said, where).toStrictEqual(scheduled);
        const preemption = plan.preempt.find((each) => each.place.jobId === job.id);
        expect(nextPass.preempts, where).toStrictEqual(
          preemption ? { task: preemption.place.taskIndex, host: preemption.place.host } : null,
        );
        if (scheduled.length > 0) started++;
        if (preemption) preempted++;
        if (nextPass.line.includes("is at the limit of")) limited++;
      }
    }
    // The states are varied enough to say something both ways.
    expect(jobsSeen).toBeGreaterThan(STATES);
    expect(started).toBeGreaterThan(STATES / 10);
    expect(jobsSeen - started).toBeGreaterThan(STATES / 10);
    expect(preempted).toBeGreaterThan(0);
    expect(limited).toBeGreaterThan(0);
  });
});
