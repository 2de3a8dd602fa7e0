// plan: the time of one scheduling pass (pure, in process, no I/O) over a 100,000-task array that
// fits nowhere, next to jobs that do fit, on 1,000 hosts. Before batches, such an array was walked
// task by task on every pass.

import { planPass } from "../src/broker/planner/plan-pass.ts";
import { ClusterState } from "../src/broker/state/cluster-state.ts";
import { newHostEntry } from "../src/broker/state/host-entry.ts";
import { JobEntry } from "../src/broker/state/job-entry.ts";
import { validateJobSpec } from "../src/common/model/job-spec.ts";
import type { AttemptRecord, HostFacts, JobRecord, TaskRecord } from "../src/common/model/records.ts";
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
    return {
      plan: {
        unplaceableArray100k: figures,
        metascheduling100k: metaFigures,
        backlog100kJobs: backlogFigures,
      },
    };
  },
};
