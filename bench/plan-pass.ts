// plan: the time of one scheduling pass (pure, in process, no I/O) over a 100,000-task array that
// fits nowhere, next to jobs that do fit, on 1,000 hosts. Before batches, such an array was walked
// task by task on every pass.

import { planPass } from "../src/broker/planner/plan-pass.ts";
import { ClusterState } from "../src/broker/state/cluster-state.ts";
import { newHostEntry } from "../src/broker/state/host-entry.ts";
import { JobEntry } from "../src/broker/state/job-entry.ts";
import type { HostFacts } from "../src/common/model/host-facts.ts";
import { validateJobSpec } from "../src/common/model/job-spec.ts";
import { parseQosFile } from "../src/common/model/qos-file.ts";
import type { AttemptRecord, JobRecord, TaskRecord } from "../src/common/model/records.ts";
import { parseSharesFile } from "../src/common/model/shares-file.ts";
import { type Benchmark, median, round } from "./benchmark.ts";

const TASKS = 100_000;
const HOSTS = 1_000;
const RUNS = 50;

function facts(name: string, speed = 1): HostFacts {
  return {
    name,
    pool: "default",
    os: "linux",
    arch: "x86_64",
    cpus: 4,
    memoryMb: 8192,
    memFreeMb: 8192,
    load1: 0,
    cpuFree: 1,
    diskFreeMb: 10_000,
    speed,
    labels: {},
    slotsFree: 4,
  };
}

function job(
  id: string,
  tasks: number,
  spec: Record<string, unknown>,
  createdAt: number,
  priority = 0,
  state: TaskRecord["state"] = "pending",
): JobEntry {
  const record: JobRecord = {
    id,
    name: id,
    owner: "bench",
    state,
    priority,
    held: false,
    cancelRequested: false,
    createdAt,
    endedAt: null,
    spec: validateJobSpec({ command: "true", ...spec }),
    inputs: [],
    inputDigests: null,
    dynamicRequirements: null,
    submitKey: null,
    slowHosts: [],
    workflow: null,
  };
  const list: TaskRecord[] = Array.from({ length: tasks }, (_, index) => ({
    jobId: id,
    index,
    state,
    attempts: 0,
    failures: 0,
    losses: 0,
    systemFailures: 0,
    notBefore: null,
    resultAttempt: null,
    checkpoint: null,
    migration: null,
    memoryMb: null,
  }));
  return new JobEntry(record, createdAt, list);
}

/** A state where every host has one free slot taken by nothing: the array asks for too much memory. */
function cluster(variant: "memory" | "requirements"): ClusterState {
  const state = new ClusterState();
  for (let i = 0; i < HOSTS; i++) {
    const name = `h${i}`;
    const entry = newHostEntry(
      {
        name,
        pool: "default",
        state: "ready",
        slots: 4,
        labels: {},
        facts: facts(name),
        lastSeen: 0,
        endsAt: null,
      },
      true,
    );
    entry.usedSlots = 3;
    state.hosts.set(name, entry);
  }
  const spec =
    variant === "memory" ? { resources: { memoryMb: 1_000_000 } } : { requirements: "host.memFreeMb >= 1e9" };
  state.addJob(job("array", TASKS, { ...spec, array: { count: TASKS } }, 1));
  return state;
}

function timePasses(state: ClusterState): number[] {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    const plan = planPass(state, 1_000);
    times.push(performance.now() - start);
    if (plan !== null) throw new Error("the array was placed: the benchmark's set-up is wrong");
  }
  return times;
}

/** Hosts that run work (speeds 1 to 10) and the fast, empty ones the pending array may not use. */
const BUSY_HOSTS = 990;
const NOW = 1_000_000;

/**
 * 100,000 pending tasks of priority 10 on 1,000 hosts: 990 hosts full of priority-0 tasks half
 * done with checkpoints (preemption candidates), 10 fast hosts empty that the array's requirements
 * rule out (room for rescheduling). A pass plans one preemption and moves tasks to the fast hosts.
 */
function metaschedulingCluster(): ClusterState {
  const state = new ClusterState();
  for (let i = 0; i < HOSTS; i++) {
    const name = `h${i}`;
    const speed = i < BUSY_HOSTS ? 1 + (i % 10) : 50;
    state.hosts.set(
      name,
      newHostEntry(
        {
          name,
          pool: "default",
          state: "ready",
          slots: 4,
          labels: {},
          facts: facts(name, speed),
          lastSeen: 0,
          endsAt: null,
        },
        true,
      ),
    );
  }
  const low = job("low", BUSY_HOSTS * 4, { array: { count: BUSY_HOSTS * 4 } }, 1, 0, "running");
  state.addJob(low);
  for (const task of low.tasks) {
    task.attempts = 1;
    task.checkpoint = { generation: 3, bytes: 10_000_000, at: NOW - 10_000 };
    const attempt: AttemptRecord = {
      jobId: "low",
      taskIndex: task.index,
      number: 1,
      host: `h${Math.floor(task.index / 4)}`,
      placement: [{ host: `h${Math.floor(task.index / 4)}`, rank: 0 }],
      state: "running",
      outcome: null,
      reason: null,
      exitCode: null,
      restarted: false,
      startedAt: NOW - 600_000,
      endedAt: null,
      stop: null,
      memoryMb: null,
      usage: null,
    };
    low.addAttempt(attempt);
    const live = state.activate(low, attempt);
    live.progress = { baseline: null, last: { fraction: 0.5, at: NOW - 1000 } };
  }
  state.addJob(job("array", TASKS, { requirements: "host.speed < 20.0", array: { count: TASKS } }, 2, 10));
  return state;
}

/** A backlog: 100,000 single-task jobs queued (two owners), one host of 4 slots with one free. */
function backlogCluster(): ClusterState {
  const state = new ClusterState();
  const host = newHostEntry(
    {
      name: "h0",
      pool: "default",
      state: "ready",
      slots: 4,
      labels: {},
      facts: facts("h0"),
      lastSeen: 0,
      endsAt: null,
    },
    true,
  );
  host.usedSlots = 3;
  state.hosts.set("h0", host);
  for (let i = 0; i < TASKS; i++) {
    const entry = job(`j${i}`, 1, {}, i);
    entry.record.owner = i % 3 === 0 ? "alice" : "bob";
    state.addJob(entry);
  }
  return state;
}

/** The sharing policy's scale: users in groups (accounts of the shares tree), tiers with limits. */
const SHARING_USERS = 1_000;
const SHARING_GROUPS = 10;
const SHARING_JOBS = 100_000;

/**
 * Three tiers: high preempts normal; batch limits each user to 2 running cpus; each group to
 * `groupCpus` running cpus (300 of each group's run at the start).
 */
function sharingQos(groupCpus: number): string {
  return `
tiers:
  normal: {}
  high: {priority: 10, preempt: [normal]}
  batch: {maxRunningCpus: 2}
groups:
${Array.from({ length: SHARING_GROUPS }, (_, g) => `  g${g}: {maxRunningCpus: ${groupCpus}}`).join("\n")}
`;
}

/** Ten accounts of shares 1 to 10, a hundred users each, of one share. */
function sharingTree(): string {
  const lines = ["accounts:"];
  for (let g = 0; g < SHARING_GROUPS; g++) {
    lines.push(`  g${g}:`, `    shares: ${g + 1}`, "    users:");
    for (let u = g; u < SHARING_USERS; u += SHARING_GROUPS) lines.push(`      u${u}: 1`);
  }
  return lines.join("\n");
}

/** A small deterministic generator (the same state every run). */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    return x / 2_147_483_648;
  };
}

/**
 * 100,000 single-task jobs queued by 1,000 users in 10 groups (a shares tree, decayed usage of
 * each user, a token naming each user's group), of three QoS tiers (high preempts normal, batch
 * limits a user's running cpus), priorities 0 to 9; 1,000 hosts of 4 slots, 3 of them running
 * tasks of these users (their running cpus count against the limits), 1 free.
 */
export function sharingCluster(groupCpus: number): ClusterState {
  const next = random(7);
  const state = new ClusterState(
    { tree: parseSharesFile(sharingTree()), halfLifeSeconds: 7 * 86_400 },
    parseQosFile(sharingQos(groupCpus)),
  );
  for (let u = 0; u < SHARING_USERS; u++) {
    state.tokens.put({
      id: `t${u}`,
      kind: "api",
      subject: `u${u}`,
      role: "user",
      pool: null,
      parent: null,
      hash: "",
      createdAt: 0,
      createdBy: "bench",
      expiresAt: null,
      revokedAt: null,
      group: `g${u % SHARING_GROUPS}`,
      qos: ["normal", "high", "batch"],
    });
    state.owners.used(`u${u}`, Math.floor(next() * 100_000), NOW - Math.floor(next() * 86_400_000));
  }
  for (let i = 0; i < HOSTS; i++) {
    const name = `h${i}`;
    state.hosts.set(
      name,
      newHostEntry(
        {
          name,
          pool: "default",
          state: "ready",
          slots: 4,
          labels: {},
          facts: facts(name),
          lastSeen: 0,
          endsAt: null,
        },
        true,
      ),
    );
  }
  const tiers = [
    "normal",
    "normal",
    "normal",
    "normal",
    "normal",
    "normal",
    "normal",
    "normal",
    "high",
    "batch",
  ];
  // Running work: three tasks on each host, of users taken in turn.
  for (let i = 0; i < HOSTS * 3; i++) {
    const owner = `u${(i * 7) % SHARING_USERS}`;
    const entry = job(`r${i}`, 1, { qos: tiers[i % tiers.length] }, i, 0, "running");
    entry.record.owner = owner;
    state.addJob(entry);
    const task = entry.tasks[0];
    task.attempts = 1;
    const host = `h${Math.floor(i / 3)}`;
    const attempt: AttemptRecord = {
      jobId: entry.id,
      taskIndex: 0,
      number: 1,
      host,
      placement: [{ host, rank: 0 }],
      state: "running",
      outcome: null,
      reason: null,
      exitCode: null,
      restarted: false,
      startedAt: NOW - 60_000,
      endedAt: null,
      stop: null,
      memoryMb: null,
      usage: null,
    };
    entry.addAttempt(attempt);
    state.activate(entry, attempt);
  }
  for (let i = 0; i < SHARING_JOBS; i++) {
    const entry = job(
      `q${i}`,
      1,
      { qos: tiers[Math.floor(next() * tiers.length)] },
      HOSTS * 3 + i,
      Math.floor(next() * 10),
    );
    entry.record.owner = `u${Math.floor(next() * SHARING_USERS)}`;
    state.addJob(entry);
  }
  return state;
}

/** Passes over the sharing cluster (not applied: every run plans the same), and what one plans. */
function timeSharingPasses(groupCpus: number): { times: number[]; placed: number; owners: number } {
  const state = sharingCluster(groupCpus);
  const times: number[] = [];
  let placed = 0;
  let owners = 0;
  for (let run = 0; run < SHARING_RUNS; run++) {
    const start = performance.now();
    const plan = planPass(state, NOW, { preemptWaitSeconds: 300 });
    times.push(performance.now() - start);
    placed = plan?.place.length ?? 0;
    owners = new Set(plan?.place.map((entry) => state.jobs.get(entry.jobId)?.record.owner)).size;
  }
  if (placed === 0) throw new Error("the benchmark's set-up is wrong: the pass placed nothing");
  return { times, placed, owners };
}

const SHARING_RUNS = 20;

/** A pass that places one task of a 100,000-job backlog (not applied: every run plans the same). */
function timeBacklogPasses(): number[] {
  const state = backlogCluster();
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    const plan = planPass(state, NOW);
    times.push(performance.now() - start);
    if (plan?.place.length !== 1) throw new Error("the benchmark's set-up is wrong: expected one placement");
  }
  return times;
}

function timeMetaschedulingPasses(): { times: number[]; stops: number; preemptions: number } {
  const times: number[] = [];
  let stops = 0;
  let preemptions = 0;
  for (let run = 0; run < RUNS; run++) {
    const state = metaschedulingCluster();
    const start = performance.now();
    const plan = planPass(state, NOW, { preemptWaitSeconds: 300, rescheduleGain: 0.3 });
    times.push(performance.now() - start);
    if (!plan || plan.place.length > 0)
      throw new Error("the benchmark's set-up is wrong: expected stops only");
    // A preemption is one entry of its own: its stop and the placement whose room it keeps.
    stops = plan.stop.length + plan.preempt.length;
    preemptions = plan.preempt.length;
  }
  return { times, stops, preemptions };
}

/** Hosts and tasks of the placement pass: every task has a slot, across ten times more hosts. */
const WIDE_HOSTS = 10_000;
const WIDE_SLOTS = 10;
const WIDE_RUNS = 5;

/**
 * One pass placing a 100,000-task array on 10,000 empty hosts of 10 slots (every task placed; the
 * plan is not applied, so every run plans the same). A scan of every host for each task made
 * this a billion comparisons (stages/fit-queue.ts).
 */
function timeWidePlacement(): { times: number[]; placed: number } {
  const state = new ClusterState();
  for (let i = 0; i < WIDE_HOSTS; i++) {
    const name = `w${i}`;
    const entry = newHostEntry(
      {
        name,
        pool: "default",
        state: "ready",
        slots: WIDE_SLOTS,
        labels: {},
        facts: { ...facts(name), cpus: WIDE_SLOTS, slotsFree: WIDE_SLOTS },
        lastSeen: 0,
        endsAt: null,
      },
      true,
    );
    state.hosts.set(name, entry);
  }
  state.addJob(job("wide", TASKS, { array: { count: TASKS } }, 1));
  const times: number[] = [];
  let placed = 0;
  for (let run = 0; run < WIDE_RUNS; run++) {
    const start = performance.now();
    const plan = planPass(state, 1_000);
    times.push(performance.now() - start);
    placed = plan?.place.length ?? 0;
  }
  if (placed !== TASKS) throw new Error(`the wide pass placed ${placed} tasks, not ${TASKS}`);
  return { times, placed };
}

export const planPassBenchmark: Benchmark = {
  name: "plan",
  description: `one scheduling pass over a ${TASKS.toLocaleString("en")}-task array that fits nowhere, ${HOSTS} hosts (pure)`,
  async run({ progress }) {
    const figures: Record<string, unknown> = {};
    for (const variant of ["memory", "requirements"] as const) {
      const times = timePasses(cluster(variant));
      figures[variant === "memory" ? "tooMuchMemory" : "requirementsFalse"] = {
        medianMs: round(median(times), 3),
        maxMs: round(Math.max(...times), 3),
        runs: RUNS,
      };
      progress(`plan pass, array that fits nowhere (${variant}): median ${round(median(times), 3)} ms`);
    }
    const meta = timeMetaschedulingPasses();
    const metaFigures = {
      medianMs: round(median(meta.times), 3),
      maxMs: round(Math.max(...meta.times), 3),
      runs: RUNS,
      stops: meta.stops,
      preemptions: meta.preemptions,
    };
    progress(
      `plan pass, 100,000 pending tasks on 1,000 busy hosts with preemption and rescheduling: median ${metaFigures.medianMs} ms (${meta.preemptions} preemption, ${meta.stops - meta.preemptions} moves)`,
    );
    const backlog = timeBacklogPasses();
    const backlogFigures = {
      medianMs: round(median(backlog), 3),
      maxMs: round(Math.max(...backlog), 3),
      runs: RUNS,
    };
    progress(
      `plan pass, one free slot behind a backlog of 100,000 queued jobs: median ${backlogFigures.medianMs} ms`,
    );
    const sharingFigures: Record<string, unknown> = {};
    // Each group's limit well above its use (batch users' own limit holds them), then every group
    // reaching its limit within the pass (its users' backlogs are passed over, job by job).
    for (const [name, groupCpus] of [
      ["groupsUnderLimit", 3_500],
      ["groupsReachLimit", 350],
    ] as const) {
      const sharing = timeSharingPasses(groupCpus);
      sharingFigures[name] = {
        jobs: SHARING_JOBS,
        users: SHARING_USERS,
        hosts: HOSTS,
        groupMaxRunningCpus: groupCpus,
        medianMs: round(median(sharing.times), 3),
        maxMs: round(Math.max(...sharing.times), 3),
        runs: SHARING_RUNS,
        placed: sharing.placed,
        ownersPlaced: sharing.owners,
      };
      progress(
        `plan pass with QoS tiers, running limits and a shares tree (${name}), ${SHARING_JOBS.toLocaleString("en")} queued jobs of ${SHARING_USERS} users on ${HOSTS} hosts: median ${round(median(sharing.times), 3)} ms (${sharing.placed} placed, ${sharing.owners} users)`,
      );
    }
    const wide = timeWidePlacement();
    const wideFigures = {
      hosts: WIDE_HOSTS,
      slotsPerHost: WIDE_SLOTS,
      placed: wide.placed,
      medianMs: round(median(wide.times), 1),
      maxMs: round(Math.max(...wide.times), 1),
      runs: WIDE_RUNS,
    };
    progress(
      `plan pass placing a 100,000-task array on ${WIDE_HOSTS.toLocaleString("en")} hosts: median ${wideFigures.medianMs} ms`,
    );
    return {
      plan: {
        unplaceableArray100k: figures,
        placeArray100kOn10kHosts: wideFigures,
        metascheduling100k: metaFigures,
        backlog100kJobs: backlogFigures,
        sharing100kJobs: sharingFigures,
      },
    };
  },
};
