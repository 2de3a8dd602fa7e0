// One writer: handlers change durable state only through the writes that record it, so after any
// series of events the state a broker rebuilds from the recorded changes is the live state (soft
// state aside: leases, connections, progress; src/broker/state/soft-state.ts). Run over a day of a small
// cluster, checked after every event; and a change made without its record is caught. All or
// nothing: each event is first made to throw at each of its writes in turn (and after its last),
// and each throw must leave the state as it was before the event and as the store has it.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${param.seed}` is the job file's placeholder

import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { planPass } from "../../../../../src/broker/planner/plan-pass.ts";
import {
  attachHost,
  attemptEnded,
  attemptReports,
  attemptStarted,
  startUndelivered,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { applyPlan } from "../../../../../src/broker/reactor/handlers/apply-plan.ts";
import { purgeAccounting, setMeta } from "../../../../../src/broker/reactor/handlers/broker-records.ts";
import {
  checkpointObjectStored,
  commitCheckpoint,
  recordLegacyParts,
} from "../../../../../src/broker/reactor/handlers/checkpoints.ts";
import {
  cancelJob,
  cancelTasks,
  drainHost,
  forgetHost,
  holdJob,
  migrateJob,
  releaseJob,
  removeHost,
  removeJob,
  undrainHost,
} from "../../../../../src/broker/reactor/handlers/control.ts";
import { heartbeatReported } from "../../../../../src/broker/reactor/handlers/heartbeat.ts";
import { expireLeases } from "../../../../../src/broker/reactor/handlers/leases.ts";
import { retryJob } from "../../../../../src/broker/reactor/handlers/retry.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import {
  createToken,
  issueHostCredential,
  revokeToken,
} from "../../../../../src/broker/reactor/handlers/tokens.ts";
import { updateJob } from "../../../../../src/broker/reactor/handlers/update.ts";
import {
  cancelWorkflow,
  holdWorkflow,
  releaseWorkflow,
  removeWorkflow,
} from "../../../../../src/broker/reactor/handlers/workflow-control.ts";
import { retryWorkflow, submitWorkflow } from "../../../../../src/broker/reactor/handlers/workflows.ts";
import type { Step } from "../../../../../src/broker/reactor/step.ts";
import { policyOf } from "../../../../../src/broker/scheduler/policy.ts";
import { ClusterState } from "../../../../../src/broker/state/cluster-state.ts";
import { agentDetached, agentSeen, heartbeatSeen } from "../../../../../src/broker/state/soft-state.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { parseQosFile } from "../../../../../src/common/model/qos-file.ts";
import { newTokenOf } from "../../../../../src/common/model/tokens.ts";
import { validateWorkflowFile } from "../../../../../src/common/model/workflow.ts";
import { ended, facts, hello } from "../../../../helpers/agent-messages.ts";
import { durable, liveJobsOf } from "../../../../helpers/durable-state.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";
import { InjectedFault, throwAtWrite } from "../../../../helpers/throwing-writes.ts";

/** The same, counted from the live attempts themselves. */
function liveJobsCounted(state: ClusterState): string[] {
  const counts = new Map<string, number>();
  for (const { job } of state.live.values()) counts.set(job.id, (counts.get(job.id) ?? 0) + 1);
  return [...counts].map(([id, count]) => `${id}: ${count}`).sort();
}

/**
 * Checks that the state rebuilt from the recorded changes is the live one, and that the running
 * jobs' index agrees with the live attempts.
 */
function checkState(bench: HandlerBench): void {
  expect(durable(bench.recovered())).toEqual(durable(bench.state));
  expect(liveJobsOf(bench.state)).toEqual(liveJobsCounted(bench.state));
}

/**
 * Handles one event and checks the state (checkState); first, the event made to throw at each of
 * its writes in turn, and after its last, must leave the state as it was, and as the store has it.
 */
function event<T>(bench: HandlerBench, handler: (step: Step) => T): T {
  const before = structuredClone(durable(bench.state));
  bench.throwAtEachWrite(handler, (fault) => {
    expect(durable(bench.state), fault.message).toEqual(before);
    checkState(bench);
  });
  const { result } = bench.run(handler);
  checkState(bench);
  return result;
}

/** A scheduling pass: its plan applied as one event (event). */
function schedule(bench: HandlerBench): void {
  const plan = planPass(bench.state, bench.now, bench.policy);
  if (plan) event(bench, (step) => applyPlan(step, plan));
}

/** Reports every start sent since `from` as started. */
function startAll(bench: HandlerBench, from: number): void {
  for (const start of bench.starts().slice(from))
    event(bench, (step) =>
      attemptStarted(step, start.host, {
        jobId: start.jobId,
        taskIndex: start.taskIndex,
        attempt: start.attempt,
      }),
    );
}

const sha = (letter: string) => letter.repeat(64);

describe("the state rebuilt from the recorded changes", () => {
  it("is the live state with QoS tiers: a job's tier, its tier priority, a tier's time limit, a token's group and tiers", () => {
    const policy = parseQosFile(
      "tiers: {normal: {maxWallSeconds: 600}, high: {priority: 10, preempt: [normal]}}",
    );
    const bench = new HandlerBench(new ClusterState({}, policy));
    event(bench, (step) =>
      createToken(step, {
        token: newTokenOf("api"),
        subject: "alice",
        role: "user",
        pool: null,
        createdBy: "admin",
        expiresAt: null,
        group: "physics",
        qos: ["normal", "high"],
      }),
    );
    event(bench, (step) => attachHost(step, hello("h1", [], 1)));
    const submit = (id: string, spec: Record<string, unknown>) =>
      event(bench, (step) =>
        submitJob(step, {
          id,
          spec: validateJobSpec(spec),
          owner: "alice",
          inputs: [],
          allowedQos: ["normal", "high"],
        }),
      );
    submit("1", { command: "a" });
    submit("2", { command: "b", qos: "high" });
    expect(bench.state.jobs.get("1")?.record.spec.timeLimitSeconds).toBe(600);
    expect(bench.recovered().jobs.get("2")?.qosPriority).toBe(10);
    schedule(bench);
    expect(bench.starts().map((start) => start.jobId)).toStrictEqual(["2"]);
    startAll(bench, 0);
    event(bench, (step) => attemptEnded(step, "h1", ended("2", 1)));
    expect(bench.recovered().ended.get("2")?.qos).toBe("high");
    expect(bench.recovered().tokens.groups()).toStrictEqual(new Map([["alice", "physics"]]));
  });

  it("is the live state after GPU placements and an out-of-memory end that grows a task's memory", () => {
    const bench = new HandlerBench();
    const gpuFacts = facts("g1", { gpus: ["0", "1"], resources: { license: 2 } });
    event(bench, (step) => attachHost(step, { ...hello("g1", [], 4), facts: gpuFacts }));
    const submit = (id: string, spec: Record<string, unknown>) =>
      event(bench, (step) =>
        submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
      );
    submit("1", { command: "a", resources: { gpus: 1, custom: { license: 1 } } });
    submit("2", {
      command: "b",
      resources: { gpus: 1, memoryMb: 100 },
      retry: { maxAttempts: 3, backoffSeconds: 0, memoryGrowth: 2 },
    });
    schedule(bench);
    startAll(bench, 0);
    expect(bench.starts().map((start) => start.gpus)).toEqual([["0"], ["1"]]);
    event(bench, (step) =>
      attemptEnded(step, "g1", ended("2", 1, "failed", { cause: "oom", reason: "out of memory" })),
    );
    expect(bench.state.jobs.get("2")?.tasks[0].memoryMb).toBe(200);
    schedule(bench);
    expect(bench.starts().at(-1)).toMatchObject({ jobId: "2", attempt: 2, memoryMb: 200, gpus: ["1"] });
    event(bench, (step) => attemptEnded(step, "g1", ended("1", 1)));
  });

  it("is the live state after every event of a day of a small cluster", () => {
    const bench = new HandlerBench();
    const join = newTokenOf("join");
    event(bench, (step) =>
      createToken(step, {
        token: newTokenOf("api"),
        subject: "alice",
        role: "user",
        pool: null,
        createdBy: "admin",
        expiresAt: null,
      }),
    );
    event(bench, (step) =>
      createToken(step, {
        token: join,
        subject: "",
        role: null,
        pool: "default",
        createdBy: "admin",
        expiresAt: null,
      }),
    );
    for (const name of ["h1", "h2", "h3"]) {
      event(bench, (step) => issueHostCredential(step, name, "default", join.id, newTokenOf("host")));
      event(bench, (step) => attachHost(step, hello(name)));
    }
    // A second credential for h1 revokes its first.
    event(bench, (step) => issueHostCredential(step, "h1", "default", join.id, newTokenOf("host")));

    const submit = (id: string, spec: Record<string, unknown>) =>
      event(bench, (step) =>
        submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
      );
    submit("1", { command: "sleep 100" });
    submit("2", { command: "work", array: { count: 3 }, retry: { maxAttempts: 2, backoffSeconds: 0 } });
    submit("3", { command: "after", dependsOn: ["1"] });
    submit("4", { command: "sleep 200" });
    submit("5", { command: "doomed", dependsOn: ["4"] });
    expect(bench.state.jobs.get("3")?.record.state).toBe("waiting");

    schedule(bench);
    startAll(bench, 0);
    expect(bench.starts().length).toBeGreaterThanOrEqual(5);

    // Job 1 checkpoints twice; the older generation goes.
    for (const generation of ["a", "b"]) {
      const attempt = bench.state.jobs.get("1")!.latestAttempt(0)!;
      event(bench, (step) =>
        checkpointObjectStored(step, {
          jobId: "1",
          taskIndex: 0,
          ranks: [0],
          sha256: sha(generation),
          bytes: 10,
        }),
      );
      event(bench, (step) =>
        commitCheckpoint(step, {
          jobId: "1",
          taskIndex: 0,
          attempt: attempt.number,
          manifest: { files: [{ path: "state", sha256: sha(generation), bytes: 10 }] },
        }),
      );
    }
    expect(bench.state.jobs.get("1")?.tasks[0].checkpoint?.generation).toBe(2);

    // Job 2: a task fails (and goes round again), another succeeds.
    const attemptOf = (jobId: string, taskIndex: number) =>
      bench.state.jobs.get(jobId)!.latestAttempt(taskIndex)!;
    const endOf = (jobId: string, taskIndex: number, outcome: Parameters<typeof ended>[2]) => {
      const attempt = attemptOf(jobId, taskIndex);
      event(bench, (step) =>
        attemptEnded(step, attempt.host, ended(jobId, attempt.number, outcome, { taskIndex })),
      );
    };
    endOf("2", 0, "failed");
    endOf("2", 1, "succeeded");
    expect(bench.state.jobs.get("2")?.tasks[0]).toMatchObject({ state: "pending", failures: 1 });

    // Hold and release job 4; its stopped attempt ends as the agent reports it.
    event(bench, (step) => holdJob(step, "4"));
    endOf("4", 0, "preempted");
    event(bench, (step) => releaseJob(step, "4"));

    // Job 1 migrates to h3 and restarts from its checkpoint.
    const from = bench.starts().length;
    const migrating = attemptOf("1", 0);
    event(bench, (step) => migrateJob(step, "1", migrating.host === "h3" ? "h2" : "h3"));
    endOf("1", 0, "migrated");
    schedule(bench);
    startAll(bench, from);
    expect(attemptOf("1", 0)).toMatchObject({ number: 2, restarted: true });

    // A heartbeat's facts are soft state until the host's record is next written (the drain).
    const busier = facts("h1", { memFreeMb: 100, load1: 3 });
    bench.heartbeat("h1", busier);
    checkState(bench);
    expect(bench.state.hosts.get("h1")?.record.facts).not.toEqual(busier);
    event(bench, (step) => drainHost(step, "h1"));
    expect(bench.state.hosts.get("h1")?.record.facts).toEqual(busier);
    event(bench, (step) => undrainHost(step, "h1"));

    // Job 1 succeeds: job 3 may start. Job 4 is cancelled: job 5 can never run and is cancelled.
    endOf("1", 0, "succeeded");
    expect(bench.state.jobs.get("3")?.record.state).toBe("pending");
    event(bench, (step) => cancelJob(step, "4"));
    // Its attempt placed again after the release stops as the agent reports it.
    for (const attempt of [...bench.state.jobs.get("4")!.allLiveAttempts()])
      event(bench, (step) => attemptEnded(step, attempt.host, ended("4", attempt.number, "cancelled")));
    expect(bench.state.header("5")?.state).toBe("cancelled");
    const before = bench.starts().length;
    schedule(bench);
    startAll(bench, before);

    // h2 goes silent: its lease runs out and what it ran is lost; the others renew theirs.
    const h2Attempts = bench.state.hosts.get("h2")!.active.size;
    bench.now += 10_000;
    for (const name of ["h1", "h3"]) agentSeen(bench.state, bench.now, name);
    event(bench, (step) => expireLeases(step, 3));
    expect(bench.state.hosts.get("h2")?.record.state).toBe("lost");
    expect(h2Attempts).toBe(1);
    expect(bench.state.hosts.get("h2")?.active.size).toBe(0);
    event(bench, (step) => removeHost(step, "h2"));

    // Ended jobs that left memory are removed; a pilot that left is forgotten.
    expect(bench.state.jobs.has("1")).toBe(false);
    event(bench, (step) => removeJob(step, "1"));
    expect(bench.state.header("1")).toBeUndefined();
    agentDetached(bench.state, "h3");
    for (const live of [...bench.state.hosts.get("h3")!.active.values()]) {
      const attempt = live.attempt;
      event(bench, (step) =>
        attemptEnded(
          step,
          "h3",
          ended(attempt.jobId, attempt.number, "succeeded", { taskIndex: attempt.taskIndex }),
        ),
      );
    }
    event(bench, (step) => forgetHost(step, "h3"));
    expect(bench.state.hosts.has("h3")).toBe(false);
    event(bench, (step) => revokeToken(step, join.id, ["join"]));
    expect(bench.state.tokens.list("host").every((token) => token.revokedAt !== null)).toBe(true);

    // The broker's own records: a pool's pilot ledger set twice, old accounting rows purged.
    event(bench, (step) => setMeta(step, "pilots.default", '["p1"]'));
    event(bench, (step) => setMeta(step, "pilots.default", "[]"));
    event(bench, (step) => purgeAccounting(step, 365));
    expect(bench.recovered().meta.get("pilots.default")).toBe("[]");
  });

  it("is the live state after every event of gangs, replicas and requirements files", () => {
    const bench = new HandlerBench();
    for (const name of ["g1", "g2", "g3"]) event(bench, (step) => attachHost(step, hello(name)));
    const submit = (id: string, spec: Record<string, unknown>) =>
      event(bench, (step) =>
        submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
      );

    // A 2-rank gang: rank 0 starts and finds the coordinator's port, then rank 1; rank 1 fails.
    submit("1", { command: "ring", nodes: 2 });
    schedule(bench);
    const [rank0] = bench.starts();
    expect(rank0).toMatchObject({ jobId: "1", gang: { rank: 0 } });
    event(bench, (step) =>
      attemptStarted(step, rank0.host, { jobId: "1", taskIndex: 0, attempt: 1, rank: 0 }, 5000),
    );
    const rank1 = bench.starts().find((start) => start.gang?.rank === 1)!;
    event(bench, (step) =>
      attemptStarted(step, rank1.host, { jobId: "1", taskIndex: 0, attempt: 1, rank: 1 }),
    );
    expect(bench.state.jobs.get("1")?.attempt(0, 1)?.state).toBe("running");
    event(bench, (step) => attemptEnded(step, rank1.host, { ...ended("1", 1, "failed"), rank: 1 }));
    expect(bench.state.jobs.get("1")?.attempt(0, 1)?.state).toBe("stopping");
    event(bench, (step) => attemptEnded(step, rank0.host, { ...ended("1", 1, "cancelled"), rank: 0 }));
    expect(bench.state.header("1")?.state).toBe("failed");

    // A task with two replicas: the first to succeed wins, the other is stopped.
    const from = bench.starts().length;
    submit("2", { command: "race", replicas: 2 });
    schedule(bench);
    schedule(bench);
    const replicas = bench.starts().slice(from);
    expect(replicas.map((start) => start.attempt)).toEqual([1, 2]);
    for (const start of replicas)
      event(bench, (step) =>
        attemptStarted(step, start.host, { jobId: "2", taskIndex: 0, attempt: start.attempt }),
      );
    event(bench, (step) => attemptEnded(step, replicas[0].host, ended("2", 1, "succeeded")));
    event(bench, (step) => attemptEnded(step, replicas[1].host, ended("2", 2, "cancelled")));
    expect(bench.state.header("2")?.state).toBe("succeeded");

    // A job writes requirements its host no longer satisfies: they become the job's, and it moves.
    const before = bench.starts().length;
    submit("3", { command: "wander", requirements: 'host.name == "g1"' });
    schedule(bench);
    const [first] = bench.starts().slice(before);
    expect(first.host).toBe("g1");
    event(bench, (step) => attemptStarted(step, "g1", { jobId: "3", taskIndex: 0, attempt: 1 }));
    bench.now += 1000;
    // A heartbeat as Core takes it: its soft state noted, then what it decides handled as an event.
    heartbeatSeen(bench.state, bench.now, "g1", hello("g1").facts, []);
    const requirements = [{ jobId: "3", taskIndex: 0, attempt: 1, text: 'host.name == "g2"' }];
    const margin = policyOf(bench.policy).walltimeMarginSeconds;
    event(bench, (step) => heartbeatReported(step, "g1", [], requirements, margin));
    expect(bench.state.jobs.get("3")?.record.dynamicRequirements).toBe('host.name == "g2"');
    event(bench, (step) => attemptEnded(step, "g1", ended("3", 1, "migrated")));
    schedule(bench);
    expect(bench.starts().at(-1)).toMatchObject({ jobId: "3", host: "g2", attempt: 2 });
  });

  it("is the live state after updates of queued jobs, a held one that ran, and an array's priority", () => {
    const bench = new HandlerBench();
    event(bench, (step) => attachHost(step, hello("h1", [], 1)));
    const submit = (id: string, spec: Record<string, unknown>) =>
      event(bench, (step) =>
        submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
      );
    submit("1", {
      command: "grows",
      resources: { memoryMb: 100 },
      retry: { maxAttempts: 3, backoffSeconds: 0, memoryGrowth: 2 },
    });
    submit("2", { command: "queued", requirements: 'host.name == "nowhere"' });
    submit("3", { command: "array", array: { count: 3 } });
    schedule(bench);
    startAll(bench, 0);
    // Job 1 runs out of memory (its task grows to 200 MB), is held, and takes new values.
    event(bench, (step) =>
      attemptEnded(step, "h1", ended("1", 1, "failed", { cause: "oom", reason: "out of memory" })),
    );
    event(bench, (step) => holdJob(step, "1"));
    event(bench, (step) =>
      updateJob(step, {
        id: "1",
        update: { resources: { memoryMb: 500 }, requirements: 'host.name == "h1"', timeLimitSeconds: 60 },
        by: "alice",
      }),
    );
    expect(bench.state.jobs.get("1")?.tasks[0].memoryMb).toBeNull();
    event(bench, (step) =>
      updateJob(step, {
        id: "2",
        update: {
          priority: 9,
          requirements: 'host.name == "h1"',
          rank: "host.speed",
          resources: { cpus: 1 },
        },
        by: "alice",
      }),
    );
    schedule(bench);
    startAll(bench, 1);
    expect(bench.starts().at(-1)).toMatchObject({ jobId: "2", host: "h1" });
    event(bench, (step) => updateJob(step, { id: "3", update: { priority: 4 }, by: "admin" }));
    event(bench, (step) => releaseJob(step, "1"));
    expect(bench.events().filter((each) => each.kind === "updated")).toHaveLength(3);
  });

  it("is the live state of a throttled array with parameters, its throttle changed while it runs", () => {
    const bench = new HandlerBench();
    event(bench, (step) => attachHost(step, hello("h1", [], 8)));
    const spec = validateJobSpec({
      command: ["./sim", "${param.seed}"],
      array: { params: [1, 2, 3, 4, 5, 6].map((seed) => ({ seed })), parallel: 2 },
    });
    event(bench, (step) => submitJob(step, { id: "1", spec, owner: "alice", inputs: [] }));
    schedule(bench);
    startAll(bench, 0);
    expect(bench.state.jobs.get("1")?.liveTasks).toBe(2);
    event(bench, (step) => updateJob(step, { id: "1", update: { array: { parallel: 4 } }, by: "alice" }));
    schedule(bench);
    startAll(bench, 2);
    event(bench, (step) => attemptEnded(step, "h1", ended("1", 1, "succeeded", { taskIndex: 0 })));
    schedule(bench);
    expect(bench.starts().map((start) => start.command)).toEqual(
      [1, 2, 3, 4, 5].map((seed) => ["./sim", String(seed)]),
    );
    // A broker rebuilt from the store knows the tasks that hold slots, the parameters and the throttle.
    const restarted = bench.restart();
    expect(restarted.state.jobs.get("1")?.liveTasks).toBe(4);
    expect(restarted.state.jobs.get("1")?.record.spec.array).toMatchObject({ count: 6, parallel: 4 });
  });

  it("is the live state after retries (of a job that left memory too), cancels of some tasks and dependency kinds", () => {
    const bench = new HandlerBench();
    event(bench, (step) => attachHost(step, hello("h1", [], 8)));
    const submit = (id: string, spec: Record<string, unknown>) =>
      event(bench, (step) =>
        submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
      );
    const endTask = (jobId: string, taskIndex: number, outcome: Parameters<typeof ended>[2]) => {
      const attempt = bench.state.jobs.get(jobId)!.latestAttempt(taskIndex)!;
      event(bench, (step) => attemptEnded(step, "h1", ended(jobId, attempt.number, outcome, { taskIndex })));
    };
    submit("1", { command: "work", array: { count: 4 } });
    submit("2", { command: "cleanup", dependsOn: [{ job: "1", when: "ended" }] });
    submit("3", { command: "rescue", dependsOn: [{ job: "1", when: "failed" }] });
    submit("4", { command: "after", array: { count: 4 }, dependsOn: [{ job: "1", tasks: "same" }] });
    schedule(bench);
    startAll(bench, 0);
    // Task 0 of job 1 succeeds: task 0 of job 4 may start before job 1 has ended.
    endTask("1", 0, "succeeded");
    expect(bench.state.jobs.get("4")?.tasks.map((task) => task.state)).toEqual([
      "pending",
      "waiting",
      "waiting",
      "waiting",
    ]);
    // Task 1 fails: task 1 of job 4 can never run. Tasks 2 and 3 are cancelled while running.
    endTask("1", 1, "failed");
    expect(bench.state.jobs.get("4")?.tasks[1].state).toBe("cancelled");
    const stopsBefore = bench.stops().length;
    event(bench, (step) => cancelTasks(step, "1", [2, 3]));
    expect(
      bench
        .stops()
        .slice(stopsBefore)
        .map((stop) => stop.taskIndex),
    ).toEqual([2, 3]);
    endTask("1", 2, "cancelled");
    expect(bench.state.jobs.get("1")?.tasks[2].state).toBe("cancelled");
    endTask("1", 3, "failed");
    // The user's cancel holds though the attempt ended failed: the task does not go round again.
    expect(bench.state.header("1")?.state).toBe("failed");
    expect(bench.state.jobs.has("1")).toBe(false);
    expect(bench.state.jobs.get("2")?.record.state).toBe("pending");
    expect(bench.state.jobs.get("3")?.record.state).toBe("pending");
    expect(bench.state.jobs.get("4")?.tasks.map((task) => task.state)).toEqual([
      "pending",
      "cancelled",
      "cancelled",
      "cancelled",
    ]);

    // Job 1 left memory: the retry brings it back from the store with its attempts.
    const stored = bench.stored();
    const storedJob = {
      job: stored.jobs.find((job) => job.id === "1")!,
      tasks: stored.tasks.filter((task) => task.jobId === "1").sort((a, b) => a.index - b.index),
      attempts: stored.attempts.filter((attempt) => attempt.jobId === "1"),
      checkpointParts: [],
    };
    const outcome = event(bench, (step) =>
      retryJob(step, { id: "1", by: "alice", failed: true, stored: structuredClone(storedJob) }),
    );
    expect(outcome.retry).toEqual([1, 3]);
    const job = bench.state.jobs.get("1")!;
    expect(job.record.state).toBe("pending");
    expect(job.tasks[1]).toMatchObject({ state: "pending", failures: 0, attempts: 1 });
    expect(job.latestAttempt(1)?.outcome).toBe("failed");
    expect(bench.state.ended.has("1")).toBe(false);
    const from = bench.starts().length;
    schedule(bench);
    startAll(bench, from);
    expect(job.latestAttempt(1)?.number).toBe(2);
    endTask("1", 1, "succeeded");
    endTask("1", 3, "succeeded");
    // Tasks 0, 1, 3 succeeded and 2 cancelled: the job reads cancelled.
    expect(bench.state.header("1")?.state).toBe("cancelled");
    expect(
      bench
        .events("1")
        .filter((each) => each.kind === "retried")
        .map((each) => each.message),
    ).toEqual(["retried by alice: tasks 1, 3"]);
  });

  it("is the live state after a workflow's submit, a failure in it and its retry", () => {
    const bench = new HandlerBench();
    event(bench, (step) => attachHost(step, hello("h1", [], 8)));
    const file = validateWorkflowFile({
      name: "diamond",
      jobs: {
        a: { command: "a" },
        b: { command: "b", dependsOn: ["a"] },
        c: { command: "c", dependsOn: [{ job: "a", when: "ended" }] },
        d: { command: "d", dependsOn: ["b", "c"] },
      },
    });
    const ids = new Map([
      ["a", "1"],
      ["b", "2"],
      ["c", "3"],
      ["d", "4"],
    ]);
    event(bench, (step) => submitWorkflow(step, { id: "flow-1", file, owner: "alice", ids }));
    expect(bench.state.jobs.get("4")?.record.workflow).toEqual({ id: "flow-1", name: "d" });
    const endJob = (jobId: string, outcome: "succeeded" | "failed") => {
      const attempt = bench.state.jobs.get(jobId)!.latestAttempt(0)!;
      event(bench, (step) => attemptEnded(step, "h1", ended(jobId, attempt.number, outcome)));
    };
    let from = 0;
    const run = () => {
      schedule(bench);
      startAll(bench, from);
      from = bench.starts().length;
    };
    run();
    endJob("1", "succeeded");
    run();
    endJob("2", "failed");
    endJob("3", "succeeded");
    expect(bench.state.header("4")?.state).toBe("cancelled");
    // The failed and cancelled jobs left memory: the command reads them from the store first.
    const snapshot = bench.stored();
    const stored = new Map(
      ["2", "4"].map((id) => [
        id,
        structuredClone({
          job: snapshot.jobs.find((job) => job.id === id)!,
          tasks: snapshot.tasks.filter((task) => task.jobId === id),
          attempts: snapshot.attempts.filter((attempt) => attempt.jobId === id),
          checkpointParts: [],
        }),
      ]),
    );
    event(bench, (step) => retryWorkflow(step, { id: "flow-1", by: "alice", stored }));
    expect(bench.state.header("2")?.state).toBe("pending");
    expect(bench.state.header("4")?.state).toBe("waiting");

    // Held and released as one; the start of job 2's next attempt cannot be delivered (it goes
    // round again); then the workflow is cancelled and removed, every job of it in one step.
    event(bench, (step) => holdWorkflow(step, "flow-1", "alice"));
    event(bench, (step) => releaseWorkflow(step, "flow-1", "alice"));
    schedule(bench);
    const [undelivered] = bench.starts().slice(from);
    expect(undelivered).toMatchObject({ jobId: "2" });
    event(bench, (step) =>
      startUndelivered(step, undelivered.host, {
        jobId: "2",
        taskIndex: 0,
        attempt: undelivered.attempt,
      }),
    );
    expect(bench.state.jobs.get("2")?.latestAttempt(0)?.outcome).toBe("lost");
    event(bench, (step) => cancelWorkflow(step, "flow-1", "alice"));
    event(bench, (step) => removeWorkflow(step, "flow-1"));
    expect(["1", "2", "3", "4"].map((id) => bench.state.header(id))).toStrictEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("is the live state after checkpoint parts of an earlier version's store are recorded", () => {
    const bench = new HandlerBench();
    event(bench, (step) =>
      submitJob(step, { id: "1", spec: validateJobSpec({ command: "sim" }), owner: "alice", inputs: [] }),
    );
    const part = (jobId: string, rank: number) => ({
      jobId,
      taskIndex: 0,
      rank,
      generation: 3,
      attempt: 1,
      files: [{ path: "state", sha256: sha("a"), bytes: 5 }],
      bytes: 5,
      at: 30,
    });
    // A job in memory, and one that is not (its parts go to the store only).
    event(bench, (step) => recordLegacyParts(step, [part("1", 0), part("1", 1), part("gone", 0)]));
    expect(
      bench.state.jobs
        .get("1")
        ?.checkpointsOf(0)
        .parts.map((each) => each.rank),
    ).toStrictEqual([0, 1]);
    expect(bench.stored().checkpointParts).toHaveLength(3);
  });

  it("is the live state after a host's reports handled together, one made to throw at each of its writes", () => {
    /** Three tasks running on h1. */
    const running = () => {
      const bench = new HandlerBench();
      event(bench, (step) => attachHost(step, hello("h1", [], 4)));
      const spec = validateJobSpec({
        command: "work",
        array: { count: 3 },
        retry: { maxAttempts: 2, backoffSeconds: 0 },
      });
      event(bench, (step) => submitJob(step, { id: "1", spec, owner: "alice", inputs: [] }));
      schedule(bench);
      startAll(bench, 0);
      return bench;
    };
    const reports = [
      ended("1", 1, "succeeded", { taskIndex: 0 }),
      ended("1", 1, "failed", { taskIndex: 1 }),
      ended("1", 1, "succeeded", { taskIndex: 2 }),
    ];
    let faults = 0;
    for (let k = 1; ; k++) {
      const bench = running();
      const { result: errors } = bench.run((step) => {
        throwAtWrite(step.write, k);
        return attemptReports(step, "h1", reports);
      });
      const failed = errors.findIndex((error) => error instanceof InjectedFault);
      if (failed < 0) break;
      faults++;
      expect(errors.filter((error) => error !== null)).toHaveLength(1);
      checkState(bench);
      // The report that threw changed nothing; the others stand, as if it had not come.
      const others = running();
      event(others, (step) => attemptReports(step, "h1", reports.toSpliced(failed, 1)));
      expect(durable(bench.state)).toEqual(durable(others.state));
    }
    expect(faults).toBeGreaterThanOrEqual(reports.length);
  });

  it("differs from the live state when a change is made without its record", () => {
    const bench = new HandlerBench();
    event(bench, (step) => attachHost(step, hello("h1")));
    event(bench, (step) =>
      submitJob(step, { id: "1", spec: validateJobSpec({ command: "sleep 1" }), owner: "alice", inputs: [] }),
    );
    schedule(bench);
    const attempt = bench.state.jobs.get("1")!.latestAttempt(0)!;
    // A handler that set the state by hand, as before the one writer, and forgot to record it.
    bench.run(() => {
      attempt.state = "running";
    });
    expect(durable(bench.recovered())).not.toEqual(durable(bench.state));
  });

  it("differs from the state before an event made to throw that changed a record by hand", () => {
    const bench = new HandlerBench();
    event(bench, (step) => attachHost(step, hello("h1")));
    event(bench, (step) =>
      submitJob(step, { id: "1", spec: validateJobSpec({ command: "sleep 1" }), owner: "alice", inputs: [] }),
    );
    const job = bench.state.jobs.get("1")!;
    const before = structuredClone(durable(bench.state));
    const faults: (number | null)[] = [];
    // A write taken back, and a change made by hand that nothing takes back.
    const writes = bench.throwAtEachWrite(
      (step) => {
        step.write.updateJob(job, { cancelRequested: true });
        job.record.held = !job.record.held;
      },
      (fault) => {
        faults.push(fault.write);
        expect(job.record.cancelRequested).toBe(false);
      },
    );
    expect(writes).toBe(1);
    expect(faults).toStrictEqual([1, null]);
    expect(durable(bench.state)).not.toEqual(before);
    expect(durable(bench.recovered())).not.toEqual(durable(bench.state));
  });
});

describe("handlers", () => {
  const folder = resolve(import.meta.dirname, "../../../../../src/broker/reactor/handlers");
  /** Durable record fields set by hand, or the state's own mutators called past step.write. */
  const byHand = [
    /\.(state|stop|outcome|exitCode|reason|endedAt|held|cancelRequested|slowHosts|attempts|failures|losses|systemFailures|notBefore|resultAttempt|checkpoint|migration|revokedAt|record|parts|lastSeen|facts)\s*(=(?!=)|\+=|-=|\+\+|--)/,
    /(?<!write)\.(setTaskState|activate|deactivate|addJob|removeJob|addAttempt|setMigration|setDynamicRequirements|checkpointCommitted)\(/,
    /\.(hosts\.(set|delete)|tokens\.put|ended\.delete|workflows\.set)\(/,
  ];

  it("change durable state only through step.write", () => {
    const found: string[] = [];
    for (const file of readdirSync(folder).filter((name) => name.endsWith(".ts"))) {
      readFileSync(join(folder, file), "utf8")
        .split("\n")
        .forEach((line, index) => {
          if (byHand.some((pattern) => pattern.test(line)))
            found.push(`${file}:${index + 1}: ${line.trim()}`);
        });
    }
    expect(found).toStrictEqual([]);
  });

  it("are caught setting a record by hand", () => {
    const lines = [
      '  attempt.state = "running";',
      '  state.setTaskState(job, task, "running");',
      "  step.state.hosts.delete(name);",
    ];
    for (const line of lines) expect(byHand.some((pattern) => pattern.test(line))).toBe(true);
    expect(byHand.some((pattern) => pattern.test("  step.write.addAttempt(job, attempt);"))).toBe(false);
    expect(byHand.some((pattern) => pattern.test('  if (attempt.state === "running") return;'))).toBe(false);
  });
});
