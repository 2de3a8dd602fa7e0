// A preemption as one plan entry, applied by the plan applier to the state alone (no store, no
// timers, a fixed clock): the stop and the room kept for the task it was made for go together,
// no other work takes that room between the stop and the start, and the task started there
// counts as started by a preemption.

import { describe, expect, it } from "vitest";
import { explainJob } from "../../../../src/broker/planner/explain-job.ts";
import { planPass } from "../../../../src/broker/planner/plan-pass.ts";
import { applyPlan } from "../../../../src/broker/reactor/handlers/apply-plan.ts";
import { endAttempt } from "../../../../src/broker/reactor/handlers/attempts.ts";
import { Step } from "../../../../src/broker/reactor/step.ts";
import type { Plan } from "../../../../src/broker/scheduler/plan.ts";
import { ClusterState } from "../../../../src/broker/state/cluster-state.ts";
import { newHostEntry } from "../../../../src/broker/state/host-entry.ts";
import { JobEntry } from "../../../../src/broker/state/job-entry.ts";
import type { HostFacts } from "../../../../src/common/model/host-facts.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import type { JobRecord, TaskRecord } from "../../../../src/common/model/records.ts";

const NOW = 1_000_000;

function facts(name: string): HostFacts {
  return {
    name,
    pool: "default",
    os: "linux",
    arch: "x86_64",
    cpus: 1,
    memoryMb: 8192,
    memFreeMb: 8192,
    load1: 0,
    cpuFree: 1,
    diskFreeMb: 10_000,
    speed: 1,
    labels: {},
    slotsFree: 1,
  };
}

function job(id: string, priority: number, seq: number): JobEntry {
  const record: JobRecord = {
    id,
    name: id,
    owner: "alice",
    state: "pending",
    priority,
    held: false,
    cancelRequested: false,
    createdAt: seq,
    endedAt: null,
    spec: validateJobSpec({ command: "true" }),
    inputs: [],
    inputDigests: null,
    dynamicRequirements: null,
    submitKey: null,
    slowHosts: [],
    workflow: null,
  };
  const task: TaskRecord = {
    jobId: id,
    index: 0,
    state: "pending",
    attempts: 0,
    failures: 0,
    losses: 0,
    systemFailures: 0,
    notBefore: null,
    resultAttempt: null,
    checkpoint: null,
    migration: null,
    memoryMb: null,
  };
  return new JobEntry(record, seq, [task]);
}

/** One host of one slot running `low`; `high` and `other` wait. */
function cluster() {
  const state = new ClusterState();
  const entry = newHostEntry(
    {
      name: "h1",
      pool: "default",
      state: "ready",
      slots: 1,
      labels: {},
      facts: facts("h1"),
      lastSeen: 0,
      endsAt: null,
    },
    true,
  );
  state.hosts.set("h1", entry);
  const low = job("low", 0, 1);
  state.addJob(low);
  run(state, { place: [{ kind: "task", jobId: "low", taskIndex: 0, host: "h1" }], stop: [], preempt: [] });
  const high = job("high", 10, 2);
  const other = job("other", 10, 3);
  state.addJob(high);
  state.addJob(other);
  return { state, low, high, other };
}

function run(state: ClusterState, plan: Plan) {
  const step = new Step(state, NOW, () => 0.5);
  return { step, applied: applyPlan(step, plan) };
}

const FOR_HIGH = { kind: "preempted-for", job: "high", priority: 10, qos: null } as const;

const preemptLowForHigh: Plan = {
  place: [],
  stop: [],
  preempt: [
    {
      stop: { jobId: "low", taskIndex: 0, attempt: 1, intent: { outcome: "preempted", reason: FOR_HIGH } },
      place: { kind: "task", jobId: "high", taskIndex: 0, host: "h1" },
    },
  ],
};

describe("a preemption as one plan entry", () => {
  it("stops the victim and keeps its room for the task it was made for, which starts there", () => {
    const { state, low } = cluster();
    const { applied } = run(state, preemptLowForHigh);
    expect(applied.stopped.map((attempt) => attempt.jobId)).toStrictEqual(["low"]);
    expect(applied.reserved).toMatchObject([{ jobId: "high", taskIndex: 0, host: "h1" }]);
    expect(low.liveAttempts(0)[0].state).toBe("stopping");

    // The victim ends: its slot is free, but kept for high; other, of the same priority, may not take it.
    const step = new Step(state, NOW, () => 0.5);
    endAttempt(step, low, low.liveAttempts(0)[0], {
      outcome: "preempted",
      exitCode: null,
      reason: FOR_HIGH,
    });
    expect(state.hostViews(NOW).find((host) => host.name === "h1")?.slotsFree).toBe(0);
    const plan = planPass(state, NOW);
    expect(plan?.place).toStrictEqual([
      { kind: "task", jobId: "high", taskIndex: 0, host: "h1", reserved: true },
    ]);
    const started = run(state, plan!).applied.started;
    expect(started.map((attempt) => attempt.jobId)).toStrictEqual(["high"]);
    expect(state.liveAttempt("high", 0, 1)?.startedByPreemption).toBe(true);
    expect(state.reservations.size).toBe(0);
  });

  it("explain over the state says what the pass does: the room kept, then the start there", () => {
    const { state, low, high, other } = cluster();
    run(state, preemptLowForHigh);
    expect(explainJob(state, high, NOW).nextPass.line).toBe(
      "room on h1 is kept for task 0 (a preemption made it): it starts there once the stopped task has ended",
    );
    const step = new Step(state, NOW, () => 0.5);
    endAttempt(step, low, low.liveAttempts(0)[0], {
      outcome: "preempted",
      exitCode: null,
      reason: FOR_HIGH,
    });
    expect(explainJob(state, high, NOW).nextPass.starts).toStrictEqual([
      { task: 0, hosts: ["h1"], replica: false },
    ]);
    expect(explainJob(state, other, NOW).nextPass.starts).toStrictEqual([]);
    expect(planPass(state, NOW)?.place.map((each) => each.jobId)).toStrictEqual(["high"]);
  });

  it("no other job's placement takes the kept room, even from a plan made before", () => {
    const { state, low } = cluster();
    run(state, preemptLowForHigh);
    const step = new Step(state, NOW, () => 0.5);
    endAttempt(step, low, low.liveAttempts(0)[0], {
      outcome: "preempted",
      exitCode: null,
      reason: FOR_HIGH,
    });
    const stale: Plan = {
      place: [{ kind: "task", jobId: "other", taskIndex: 0, host: "h1" }],
      stop: [],
      preempt: [],
    };
    expect(run(state, stale).applied.started).toStrictEqual([]);
    expect(state.liveAttempt("other", 0, 1)).toBeUndefined();
  });

  it("is applied whole or not at all: a task that no longer waits stops nothing", () => {
    const { state, low, high } = cluster();
    high.record.held = true;
    const { applied } = run(state, preemptLowForHigh);
    expect(applied.stopped).toStrictEqual([]);
    expect(applied.reserved).toStrictEqual([]);
    expect(low.liveAttempts(0)[0].state).toBe("starting");
    expect(state.reservations.size).toBe(0);
  });

  it("gives the room back when its task can no longer use it", () => {
    const { state, low, high } = cluster();
    run(state, preemptLowForHigh);
    const step = new Step(state, NOW, () => 0.5);
    endAttempt(step, low, low.liveAttempts(0)[0], {
      outcome: "preempted",
      exitCode: null,
      reason: FOR_HIGH,
    });
    high.record.held = true;
    state.queue.delete(high);
    expect(state.hostViews(NOW).find((host) => host.name === "h1")?.slotsFree).toBe(1);
    const plan = planPass(state, NOW);
    expect(plan?.place).toStrictEqual([{ kind: "task", jobId: "other", taskIndex: 0, host: "h1" }]);
    expect(state.reservations.size).toBe(0);
  });
});
