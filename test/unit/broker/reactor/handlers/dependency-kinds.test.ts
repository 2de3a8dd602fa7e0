// dependsOn's kinds through the handlers (pure functions over the state): `when: ended` runs after
// any end, `when: failed` only after a failure, a bare id only after a success; a dependency that
// can never be met cancels the job, naming it, with no attempt (at submit too); `tasks: same` lets
// task i go with task i of the other job, refuses arrays of different counts, and decides a
// dependency that left memory from what the store holds; explain says what a job waits for; a
// retried job takes its dependencies as they are now.

import { describe, expect, it } from "vitest";
import { InvalidRequestError } from "../../../../../src/broker/reactor/errors.ts";
import { attachHost, attemptEnded } from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { cancelTasks, holdJob, releaseJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { retryJob } from "../../../../../src/broker/reactor/handlers/retry.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { jobReasons } from "../../../../../src/broker/state/job-reasons.ts";
import type { StoredJob } from "../../../../../src/broker/store/store.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import type { TaskState } from "../../../../../src/common/model/states.ts";
import { ended, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

function benchWith(slots = 8): HandlerBench {
  const bench = new HandlerBench();
  bench.run((step) => attachHost(step, hello("h1", [], slots)));
  return bench;
}

function submit(
  bench: HandlerBench,
  id: string,
  spec: Record<string, unknown>,
  dependencyTasks?: Map<string, TaskState[]>,
): void {
  bench.run((step) =>
    submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [], dependencyTasks }),
  );
}

function endTask(bench: HandlerBench, jobId: string, taskIndex: number, outcome: "succeeded" | "failed") {
  const attempt = bench.state.jobs.get(jobId)!.latestAttempt(taskIndex)!;
  bench.run((step) => attemptEnded(step, attempt.host, ended(jobId, attempt.number, outcome, { taskIndex })));
}

const stateOf = (bench: HandlerBench, id: string) => bench.state.header(id)?.state;
const tasksOf = (bench: HandlerBench, id: string) =>
  bench.state.jobs.get(id)?.tasks.map((task) => task.state);
const messages = (bench: HandlerBench, id: string) => bench.events(id).map((event) => event.message);
const attemptsOf = (bench: HandlerBench, id: string) => bench.starts().filter((start) => start.jobId === id);

function storedOf(bench: HandlerBench, id: string): StoredJob {
  const stored = bench.stored();
  return structuredClone({
    job: stored.jobs.find((job) => job.id === id)!,
    tasks: stored.tasks.filter((task) => task.jobId === id).sort((a, b) => a.index - b.index),
    attempts: stored.attempts.filter((attempt) => attempt.jobId === id),
  });
}

describe("whole-job dependencies", () => {
  it.each<[string, unknown, "succeeded" | "failed", string, string | null]>([
    ["a bare id, after a success", "1", "succeeded", "pending", null],
    [
      "a bare id, after a failure",
      "1",
      "failed",
      "cancelled",
      "cancelled: dependency 1 ended failed (this job waited for it to succeed)",
    ],
    ["when: ended, after a failure", { job: "1", when: "ended" }, "failed", "pending", null],
    ["when: ended, after a success", { job: "1", when: "ended" }, "succeeded", "pending", null],
    ["when: failed, after a failure", { job: "1", when: "failed" }, "failed", "pending", null],
    [
      "when: failed, after a success",
      { job: "1", when: "failed" },
      "succeeded",
      "cancelled",
      "cancelled: dependency 1 ended succeeded (this job waited for it to fail)",
    ],
  ])("%s: the job is %s", (_, dependency, outcome, state, unmet) => {
    const bench = benchWith();
    submit(bench, "1", { command: "work" });
    submit(bench, "2", { command: "next", dependsOn: [dependency] });
    bench.schedule();
    expect(stateOf(bench, "2")).toBe("waiting");
    endTask(bench, "1", 0, outcome);
    expect(stateOf(bench, "2")).toBe(state);
    if (unmet) {
      expect(messages(bench, "2")).toContain(unmet);
      bench.schedule();
      expect(attemptsOf(bench, "2")).toEqual([]);
    } else {
      expect(messages(bench, "2")).toContain(
        outcome === "succeeded" ? "dependencies succeeded" : "dependency 1 ended failed",
      );
      bench.schedule();
      expect(attemptsOf(bench, "2")).toHaveLength(1);
    }
  });

  it("a job submitted after its dependency ended is decided at once: cancelled naming it, or pending", () => {
    const bench = benchWith();
    submit(bench, "1", { command: "work" });
    bench.schedule();
    endTask(bench, "1", 0, "succeeded");
    expect(bench.state.jobs.has("1")).toBe(false);
    submit(bench, "2", { command: "rescue", dependsOn: [{ job: "1", when: "failed" }] });
    submit(bench, "3", { command: "cleanup", dependsOn: [{ job: "1", when: "ended" }] });
    expect(stateOf(bench, "2")).toBe("cancelled");
    expect(bench.state.header("2")?.endedAt).toBe(bench.now);
    expect(messages(bench, "2")).toEqual([
      "job submitted by alice",
      "cancelled: dependency 1 ended succeeded (this job waited for it to fail)",
    ]);
    expect(stateOf(bench, "3")).toBe("pending");
  });

  it("waits for every dependency; one that can never be met cancels at once", () => {
    const bench = benchWith();
    submit(bench, "1", { command: "a" });
    submit(bench, "2", { command: "b" });
    submit(bench, "3", { command: "c", dependsOn: [{ job: "1", when: "ended" }, "2"] });
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    expect(stateOf(bench, "3")).toBe("waiting");
    expect(jobReasons(bench.state, bench.state.jobs.get("3")!, bench.now)).toEqual([
      "waiting for its dependency 2 (running) to succeed",
    ]);
    endTask(bench, "2", 0, "succeeded");
    expect(stateOf(bench, "3")).toBe("pending");
  });

  it("a held job whose dependency ends meanwhile is pending once released", () => {
    const bench = benchWith();
    submit(bench, "1", { command: "a" });
    submit(bench, "2", { command: "b", dependsOn: [{ job: "1", when: "ended" }] });
    bench.run((step) => holdJob(step, "2"));
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    expect(stateOf(bench, "2")).toBe("held");
    bench.run((step) => releaseJob(step, "2"));
    expect(stateOf(bench, "2")).toBe("pending");
  });

  it("explain says what a job waits for", () => {
    const bench = benchWith(1);
    submit(bench, "1", { command: "a" });
    submit(bench, "2", { command: "b", dependsOn: [{ job: "1", when: "ended" }] });
    submit(bench, "3", { command: "c", dependsOn: [{ job: "1", when: "failed" }] });
    expect(jobReasons(bench.state, bench.state.jobs.get("2")!, bench.now)).toEqual([
      "waits for job 1 to end (pending)",
    ]);
    expect(jobReasons(bench.state, bench.state.jobs.get("3")!, bench.now, () => false)).toEqual([
      "waits for job 1 to fail (another user's job)",
    ]);
  });
});

describe("tasks: same", () => {
  it("refuses arrays of different counts, naming both", () => {
    const bench = benchWith();
    submit(bench, "1", { command: "a", array: { count: 4 } });
    expect(() =>
      submit(bench, "2", { command: "b", array: { count: 3 }, dependsOn: [{ job: "1", tasks: "same" }] }),
    ).toThrow(
      new InvalidRequestError(
        "dependsOn[0].tasks",
        "tasks: same needs as many tasks as job 1: this job has 3, job 1 has 4",
      ),
    );
    expect(bench.state.jobs.has("2")).toBe(false);
  });

  it("task i goes once task i of the other job is as `when` asks, before that job has ended", () => {
    const bench = benchWith(8);
    submit(bench, "1", { command: "a", array: { count: 3 } });
    submit(bench, "2", { command: "b", array: { count: 3 }, dependsOn: [{ job: "1", tasks: "same" }] });
    submit(bench, "3", {
      command: "c",
      array: { count: 3 },
      dependsOn: [{ job: "1", tasks: "same", when: "failed" }],
    });
    bench.schedule();
    expect(jobReasons(bench.state, bench.state.jobs.get("2")!, bench.now)).toEqual([
      "3 tasks wait for the same tasks of job 1 (running) to succeed, task by task",
    ]);
    endTask(bench, "1", 0, "succeeded");
    expect(tasksOf(bench, "2")).toEqual(["pending", "waiting", "waiting"]);
    expect(tasksOf(bench, "3")).toEqual(["cancelled", "waiting", "waiting"]);
    expect(messages(bench, "3")).toContain(
      "task 0 cancelled: the same task of dependency 1 ended succeeded (it waited for it to fail)",
    );
    expect(stateOf(bench, "2")).toBe("pending");
    bench.schedule();
    expect(attemptsOf(bench, "2").map((start) => start.taskIndex)).toEqual([0]);
    expect(stateOf(bench, "1")).toBe("running");
    endTask(bench, "1", 1, "failed");
    endTask(bench, "1", 2, "failed");
    expect(tasksOf(bench, "2")).toEqual(["running", "cancelled", "cancelled"]);
    expect(messages(bench, "2")).toContain(
      "task 1 cancelled: the same task of dependency 1 ended failed (it waited for it to succeed)",
    );
    expect(tasksOf(bench, "3")).toEqual(["cancelled", "pending", "pending"]);
  });

  it("decides a dependency that left memory from its header, or from the task states the store holds", () => {
    const bench = benchWith(8);
    submit(bench, "1", { command: "a", array: { count: 2 } });
    bench.schedule();
    endTask(bench, "1", 0, "succeeded");
    endTask(bench, "1", 1, "failed");
    expect(bench.state.jobs.has("1")).toBe(false);
    const states = new Map<string, TaskState[]>([["1", ["succeeded", "failed"]]]);
    submit(
      bench,
      "2",
      { command: "b", array: { count: 2 }, dependsOn: [{ job: "1", tasks: "same" }] },
      states,
    );
    expect(tasksOf(bench, "2") ?? bench.state.header("2")?.state).toEqual(["pending", "cancelled"]);
    expect(messages(bench, "2")).toContain(
      "task 1 cancelled: the same task of dependency 1 ended failed (it waited for it to succeed)",
    );
    submit(bench, "3", { command: "a", array: { count: 2 } });
    bench.schedule();
    for (const index of [0, 1]) endTask(bench, "3", index, "succeeded");
    submit(bench, "4", {
      command: "b",
      array: { count: 2 },
      dependsOn: [{ job: "3", tasks: "same", when: "failed" }],
    });
    expect(stateOf(bench, "4")).toBe("cancelled");
    expect(messages(bench, "4")).toContain(
      "tasks 0, 1 cancelled: the same tasks of dependency 3 ended succeeded (they waited for them to fail)",
    );
  });
});

describe("a retry and dependencies", () => {
  it("a job cancelled because its dependency failed comes back only when retried, and waits again", () => {
    const bench = benchWith();
    submit(bench, "1", { command: "a" });
    submit(bench, "2", { command: "b", dependsOn: ["1"] });
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    expect(stateOf(bench, "2")).toBe("cancelled");
    bench.run((step) => retryJob(step, { id: "1", by: "alice", stored: storedOf(bench, "1") }));
    // Retrying job 1 does not bring job 2 back.
    expect(stateOf(bench, "2")).toBe("cancelled");
    bench.run((step) => retryJob(step, { id: "2", by: "alice", stored: storedOf(bench, "2") }));
    expect(stateOf(bench, "2")).toBe("waiting");
    bench.schedule();
    endTask(bench, "1", 0, "succeeded");
    expect(stateOf(bench, "2")).toBe("pending");
  });

  it("a retried job whose dependency still cannot be met is cancelled again, naming it", () => {
    const bench = benchWith();
    submit(bench, "1", { command: "a" });
    submit(bench, "2", { command: "b", dependsOn: ["1"] });
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    bench.run((step) => retryJob(step, { id: "2", by: "alice", stored: storedOf(bench, "2") }));
    expect(stateOf(bench, "2")).toBe("cancelled");
    expect(
      messages(bench, "2").filter((message) => message.startsWith("cancelled: dependency 1")),
    ).toHaveLength(2);
  });
});

describe("what a dependency's end writes and tells", () => {
  it("a dependency that fails cancels what waits for it, telling no release and writing no empty change", () => {
    const bench = benchWith();
    submit(bench, "1", { command: "a" });
    submit(bench, "2", { command: "b", dependsOn: ["1"] });
    bench.schedule();
    const attempt = bench.state.jobs.get("1")!.latestAttempt(0)!;
    const handled = bench.run((step) =>
      attemptEnded(step, attempt.host, ended("1", attempt.number, "failed")),
    );
    expect(stateOf(bench, "2")).toBe("cancelled");
    expect(bench.events("2").filter((event) => event.kind === "dependencies")).toEqual([]);
    expect(handled.changes.filter((change) => change.op === "putTasks" && change.tasks.length === 0)).toEqual(
      [],
    );
  });

  it("a job's new state is told to those watching it; a hold, which ends nothing, asks for no pass", () => {
    const bench = benchWith();
    const job = bench.run((step) =>
      submitJob(step, { id: "1", spec: validateJobSpec({ command: "a" }), owner: "alice", inputs: [] }),
    ).result;
    const held = bench.run((step) => holdJob(step, "1"));
    expect(held.effects).toEqual([{ kind: "jobChanged", job }]);
    expect(held.schedule).toBe(false);
  });

  it("a task let go by a cancel of the task it waits for asks for a pass", () => {
    const bench = new HandlerBench();
    submit(bench, "1", { command: "a", array: { count: 2 } });
    submit(bench, "2", {
      command: "b",
      array: { count: 2 },
      dependsOn: [{ job: "1", when: "ended", tasks: "same" }],
    });
    const handled = bench.run((step) => cancelTasks(step, "1", [0]));
    expect(tasksOf(bench, "2")).toEqual(["pending", "waiting"]);
    expect(handled.schedule).toBe(true);
  });

  it("a task retried to wait while other tasks of its job run goes once its dependency ends", () => {
    const bench = benchWith();
    submit(bench, "1", { command: "a", array: { count: 2 } });
    submit(bench, "2", { command: "b", array: { count: 2 }, dependsOn: [{ job: "1", when: "ended" }] });
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    endTask(bench, "1", 1, "succeeded");
    bench.schedule();
    endTask(bench, "2", 0, "failed");
    bench.run((step) => retryJob(step, { id: "1", by: "alice", stored: storedOf(bench, "1") }));
    bench.run((step) => retryJob(step, { id: "2", by: "alice", tasks: [0] }));
    // Job 2 runs (its task 1), its task 0 waiting for job 1 again.
    expect([stateOf(bench, "2"), tasksOf(bench, "2")]).toEqual(["running", ["waiting", "running"]]);
    bench.schedule();
    endTask(bench, "1", 0, "succeeded");
    expect(tasksOf(bench, "2")).toEqual(["pending", "running"]);
  });

  it("a dependency retried and ending again while its dependant runs changes nothing for it", () => {
    const bench = benchWith();
    submit(bench, "1", { command: "a", array: { count: 2 } });
    submit(bench, "2", { command: "b", dependsOn: [{ job: "1", when: "ended" }] });
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    endTask(bench, "1", 1, "succeeded");
    bench.schedule();
    expect(tasksOf(bench, "2")).toEqual(["running"]);
    bench.run((step) => retryJob(step, { id: "1", by: "alice", stored: storedOf(bench, "1") }));
    bench.schedule();
    endTask(bench, "1", 0, "succeeded");
    expect(stateOf(bench, "1")).toBe("succeeded");
    expect(tasksOf(bench, "2")).toEqual(["running"]);
  });
});
