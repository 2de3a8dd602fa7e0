// Retrying and cancelling some tasks, as handlers (pure functions over the state, with a clock the
// test sets): which tasks a retry takes, refusals (a job with nothing to retry, a task it does not
// have, another's), a fresh budget and the attempts kept, a job that left memory brought back,
// and a cancel of some tasks that stops only those.

import { describe, expect, it } from "vitest";
import {
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  QuotaError,
} from "../../../../../src/broker/reactor/errors.ts";
import { attachHost, attemptEnded } from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import {
  checkpointObjectStored,
  commitCheckpoint,
} from "../../../../../src/broker/reactor/handlers/checkpoints.ts";
import { cancelJob, cancelTasks, removeJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { retryJob } from "../../../../../src/broker/reactor/handlers/retry.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { ClusterState } from "../../../../../src/broker/state/cluster-state.ts";
import type { StoredJob } from "../../../../../src/broker/store/store.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { parseQosFile } from "../../../../../src/common/model/qos-file.ts";
import { ended, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

function benchWith(slots = 4): HandlerBench {
  const bench = new HandlerBench();
  bench.run((step) => attachHost(step, hello("h1", [], slots)));
  return bench;
}

function submit(bench: HandlerBench, id: string, spec: Record<string, unknown>): void {
  bench.run((step) => submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [] }));
}

function endTask(
  bench: HandlerBench,
  jobId: string,
  taskIndex: number,
  outcome: "succeeded" | "failed" | "cancelled",
) {
  const attempt = bench.state.jobs.get(jobId)!.latestAttempt(taskIndex)!;
  bench.run((step) => attemptEnded(step, attempt.host, ended(jobId, attempt.number, outcome, { taskIndex })));
}

/** What the store holds of a job, as a command reads it before the handler runs. */
function storedOf(bench: HandlerBench, id: string): StoredJob {
  const stored = bench.stored();
  return structuredClone({
    job: stored.jobs.find((job) => job.id === id)!,
    tasks: stored.tasks.filter((task) => task.jobId === id).sort((a, b) => a.index - b.index),
    attempts: stored.attempts.filter((attempt) => attempt.jobId === id),
    checkpointParts: stored.checkpointParts.filter((part) => part.jobId === id),
  });
}

/** A 4-task array whose tasks 1 and 3 failed (after 2 attempts each) and 0 and 2 succeeded. */
function failedArray(): HandlerBench {
  const bench = benchWith();
  submit(bench, "1", { command: "x", array: { count: 4 }, retry: { maxAttempts: 2, backoffSeconds: 0 } });
  bench.schedule();
  for (const index of [0, 2]) endTask(bench, "1", index, "succeeded");
  for (const index of [1, 3]) endTask(bench, "1", index, "failed");
  bench.schedule();
  for (const index of [1, 3]) endTask(bench, "1", index, "failed");
  return bench;
}

describe("retryJob", () => {
  it("gives the failed tasks of an ended job new attempts with a fresh budget; their attempts stay", () => {
    const bench = failedArray();
    expect(bench.state.header("1")?.state).toBe("failed");
    expect(bench.state.jobs.has("1")).toBe(false);
    const { result } = bench.run((step) =>
      retryJob(step, { id: "1", by: "alice", failed: true, stored: storedOf(bench, "1") }),
    );
    expect(result.retry).toEqual([1, 3]);
    const job = bench.state.jobs.get("1")!;
    expect(job.record).toMatchObject({ state: "pending", endedAt: null, cancelRequested: false });
    for (const index of [1, 3]) {
      expect(job.tasks[index]).toMatchObject({ state: "pending", failures: 0, attempts: 2, notBefore: null });
      expect(job.attempts.get(index)?.map((attempt) => attempt.outcome)).toEqual(["failed", "failed"]);
    }
    expect(job.tasks[0].state).toBe("succeeded");
    expect(bench.events("1").at(-2)?.message).toBe("retried by alice: tasks 1, 3");
    expect(bench.events("1").at(-1)?.message).toBe("failed -> pending");
    // The next attempts are numbered after the earlier ones, and may fail twice again.
    const from = bench.starts().length;
    bench.schedule();
    expect(
      bench
        .starts()
        .slice(from)
        .map((start) => [start.taskIndex, start.attempt]),
    ).toEqual([
      [1, 3],
      [3, 3],
    ]);
    endTask(bench, "1", 1, "failed");
    expect(bench.state.jobs.get("1")?.tasks[1]).toMatchObject({ state: "pending", failures: 1 });
  });

  it("restarts a task with a checkpoint from it, in a job brought back from the store", () => {
    const bench = benchWith(1);
    submit(bench, "1", { command: "x" });
    bench.schedule();
    const sha = "c".repeat(64);
    bench.run((step) =>
      checkpointObjectStored(step, { jobId: "1", taskIndex: 0, ranks: [0], sha256: sha, bytes: 7 }),
    );
    bench.run((step) =>
      commitCheckpoint(step, {
        jobId: "1",
        taskIndex: 0,
        attempt: 1,
        manifest: { files: [{ path: "state", sha256: sha, bytes: 7 }] },
      }),
    );
    endTask(bench, "1", 0, "failed");
    expect(bench.state.jobs.has("1")).toBe(false);
    bench.run((step) => retryJob(step, { id: "1", by: "alice", stored: storedOf(bench, "1") }));
    const from = bench.starts().length;
    bench.schedule();
    expect(bench.starts().slice(from)).toMatchObject([{ jobId: "1", attempt: 2, restarted: true }]);
    expect(bench.events("1").map((event) => event.message)).toContain(
      "attempt 2 on h1 restarts from checkpoint generation 1 (7 bytes)",
    );
  });

  it("takes the tasks named that failed or were cancelled, and skips the others", () => {
    const bench = failedArray();
    const { result } = bench.run((step) =>
      retryJob(step, { id: "1", by: "bob", tasks: [0, 1], stored: storedOf(bench, "1") }),
    );
    expect(result.retry).toEqual([1]);
    expect(result.skipped).toEqual([{ task: 0, state: "succeeded" }]);
    expect(bench.state.jobs.get("1")?.tasks[3].state).toBe("failed");
  });

  it("refuses a job with nothing to retry, a task it does not have, and a job there is not", () => {
    const bench = failedArray();
    const stored = storedOf(bench, "1");
    expect(() => bench.run((step) => retryJob(step, { id: "1", by: "a", tasks: [0, 2], stored }))).toThrow(
      new ConflictError(
        "nothing to retry in job 1: tasks 0, 2 succeeded (only failed or cancelled tasks are retried)",
      ),
    );
    expect(() => bench.run((step) => retryJob(step, { id: "1", by: "a", tasks: [1, 9], stored }))).toThrow(
      new InvalidRequestError("tasks", "job 1 has 4 tasks (0-3): no task 9"),
    );
    expect(() => bench.run((step) => retryJob(step, { id: "8", by: "a" }))).toThrow(NotFoundError);
    // A refusal changes nothing: the job stays out of memory, ended.
    expect(bench.state.jobs.has("1")).toBe(false);
    expect(bench.state.header("1")?.state).toBe("failed");
    submit(bench, "2", { command: "ok" });
    bench.schedule();
    endTask(bench, "2", 0, "succeeded");
    expect(() =>
      bench.run((step) => retryJob(step, { id: "2", by: "a", stored: storedOf(bench, "2") })),
    ).toThrow(new ConflictError("job 2 has no failed or cancelled task to retry"));
  });

  it("retries cancelled tasks of a cancelled job, which is no longer being cancelled", () => {
    const bench = benchWith(1);
    submit(bench, "1", { command: "x", array: { count: 2 } });
    bench.schedule();
    bench.run((step) => cancelTasks(step, "1", [0, 1]));
    endTask(bench, "1", 0, "cancelled");
    expect(bench.state.header("1")?.state).toBe("cancelled");
    bench.run((step) => retryJob(step, { id: "1", by: "alice", stored: storedOf(bench, "1") }));
    expect(bench.state.jobs.get("1")?.tasks.map((task) => task.state)).toEqual(["pending", "pending"]);
    // --failed leaves cancelled tasks alone.
    const other = benchWith(1);
    submit(other, "1", { command: "x" });
    other.run((step) => cancelTasks(step, "1", [0]));
    const stored = storedOf(other, "1");
    expect(() => other.run((step) => retryJob(step, { id: "1", by: "a", failed: true, stored }))).toThrow(
      "job 1 has no failed task to retry",
    );
  });

  it("retries a failed task of a running job, which goes on running", () => {
    const bench = benchWith(4);
    submit(bench, "1", { command: "x", array: { count: 2 } });
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    expect(bench.state.jobs.get("1")?.record.state).toBe("running");
    bench.run((step) => retryJob(step, { id: "1", by: "alice" }));
    expect(bench.state.jobs.get("1")?.tasks.map((task) => task.state)).toEqual(["pending", "running"]);
    expect(bench.state.jobs.get("1")?.record.state).toBe("running");
  });
});

describe("retryJob: what it checks, resets and tells", () => {
  it("takes a stored copy only of the job named, and only while its header is kept", () => {
    const bench = failedArray();
    submit(bench, "3", { command: "y" });
    bench.schedule();
    endTask(bench, "3", 0, "failed");
    expect(bench.state.header("3")?.state).toBe("failed");
    // Job 3 has left memory; a copy of job 1 is not it.
    expect(() =>
      bench.run((step) => retryJob(step, { id: "3", by: "a", stored: storedOf(bench, "1") })),
    ).toThrow(new NotFoundError("no job 3"));
    expect(bench.state.jobs.has("1")).toBe(false);
    const stored = storedOf(bench, "1");
    bench.run((step) => removeJob(step, "1"));
    expect(() => bench.run((step) => retryJob(step, { id: "1", by: "a", stored }))).toThrow(
      new NotFoundError("no job 1"),
    );
    expect(bench.state.jobs.has("1")).toBe(false);
  });

  it("is admitted as a submit, the tasks it retries counted as queued; a workflow's, admitted already, is not checked again", () => {
    const policy = parseQosFile("tiers:\n  normal:\n    maxQueuedTasks: 3\n");
    const bench = new HandlerBench(new ClusterState({}, policy));
    bench.run((step) => attachHost(step, hello("h1", [], 4)));
    submit(bench, "1", { command: "x", array: { count: 3 } });
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    endTask(bench, "1", 1, "failed");
    endTask(bench, "1", 2, "succeeded");
    submit(bench, "2", { command: "y", array: { count: 2 } });
    const stored = storedOf(bench, "1");
    expect(() => bench.run((step) => retryJob(step, { id: "1", by: "alice", stored }))).toThrow(QuotaError);
    expect(bench.state.jobs.has("1")).toBe(false);
    bench.run((step) => retryJob(step, { id: "1", by: "alice", stored, tasks: [0] }));
    expect(bench.state.jobs.get("1")?.tasks.map((task) => task.state)).toEqual([
      "pending",
      "failed",
      "succeeded",
    ]);
    bench.run((step) => retryJob(step, { id: "1", by: "alice", tasks: [1], admitted: true }));
    expect(bench.state.jobs.get("1")?.tasks[1].state).toBe("pending");
  });

  it("gives each task retried a fresh budget: no failures, losses or system failures, no back-off, result or migration", () => {
    const bench = failedArray();
    const stored = storedOf(bench, "1");
    Object.assign(stored.tasks[1], {
      losses: 2,
      systemFailures: 1,
      notBefore: 5,
      resultAttempt: 2,
      migration: { to: null, from: "h1" },
    });
    bench.run((step) => retryJob(step, { id: "1", by: "alice", tasks: [1], stored }));
    expect(bench.state.jobs.get("1")?.tasks[1]).toMatchObject({
      state: "pending",
      failures: 0,
      losses: 0,
      systemFailures: 0,
      notBefore: null,
      resultAttempt: null,
      migration: null,
    });
  });

  it("tells who asked, which tasks, how many, whether an array, and the workflow when it is one's; a pass follows", () => {
    const bench = failedArray();
    const handled = bench.run((step) =>
      retryJob(step, { id: "1", by: "bob", stored: storedOf(bench, "1"), workflow: "flow-7" }),
    );
    expect(handled.schedule).toBe(true);
    const retried = () =>
      bench
        .events()
        .filter((event) => event.kind === "retried")
        .map((event) => event.data);
    expect(retried()).toEqual([{ by: "bob", tasks: "1, 3", count: 2, array: true, workflow: "flow-7" }]);
    const single = benchWith(1);
    submit(single, "5", { command: "x", array: { count: 1 } });
    single.schedule();
    endTask(single, "5", 0, "failed");
    single.run((step) => retryJob(step, { id: "5", by: "bob", stored: storedOf(single, "5") }));
    expect(
      single
        .events("5")
        .filter((event) => event.kind === "retried")
        .map((event) => event.data),
    ).toStrictEqual([{ by: "bob", tasks: "0", count: 1, array: false }]);
  });

  it("a job being cancelled is no longer, once a task of it is retried; a running job's record is not written", () => {
    const bench = benchWith(4);
    submit(bench, "1", { command: "x", array: { count: 2 } });
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    const running = bench.run((step) => retryJob(step, { id: "1", by: "alice" }));
    expect(running.changes.filter((change) => change.op === "putJob")).toEqual([]);
    // Its task, of a job that waits for nothing, is written once: pending.
    expect(running.changes.filter((change) => change.op === "putTasks")).toEqual([
      { op: "putTasks", tasks: [expect.objectContaining({ index: 0, state: "pending" })] },
    ]);
    bench.schedule();
    endTask(bench, "1", 0, "failed");
    bench.run((step) => cancelJob(step, "1"));
    expect(bench.state.jobs.get("1")?.record).toMatchObject({ state: "running", cancelRequested: true });
    bench.run((step) => retryJob(step, { id: "1", by: "alice" }));
    expect(bench.state.jobs.get("1")?.record.cancelRequested).toBe(false);
  });
});

describe("cancelTasks", () => {
  it("cancels pending tasks at once and stops running ones; the rest go on", () => {
    const bench = benchWith(2);
    submit(bench, "1", { command: "x", array: { count: 5 }, retry: { maxAttempts: 2, backoffSeconds: 0 } });
    bench.schedule();
    const stops = bench.stops().length;
    bench.run((step) => cancelTasks(step, "1", [1, 3, 4]));
    const job = bench.state.jobs.get("1")!;
    expect(job.tasks.map((task) => task.state)).toEqual([
      "running",
      "running",
      "pending",
      "cancelled",
      "cancelled",
    ]);
    expect(
      bench
        .stops()
        .slice(stops)
        .map((stop) => [stop.taskIndex, stop.reason]),
    ).toEqual([[1, "cancelled by user"]]);
    expect(job.record.cancelRequested).toBe(false);
    expect(bench.events("1").at(-1)?.message).toBe("cancel of tasks 1, 3, 4 requested by user");
    // The stopped task does not go round again when its process exits non-zero before the stop.
    endTask(bench, "1", 1, "failed");
    expect(job.tasks[1].state).toBe("cancelled");
    bench.schedule();
    endTask(bench, "1", 0, "succeeded");
    endTask(bench, "1", 2, "succeeded");
    // Some tasks cancelled, the others succeeded: the job reads cancelled.
    expect(bench.state.header("1")?.state).toBe("cancelled");
  });

  it("leaves ended tasks as they are, and refuses a task the job does not have", () => {
    const bench = benchWith(1);
    submit(bench, "1", { command: "x", array: { count: 2 } });
    bench.schedule();
    endTask(bench, "1", 0, "succeeded");
    const before = bench.events("1").length;
    bench.run((step) => cancelTasks(step, "1", [0]));
    expect(bench.events("1")).toHaveLength(before);
    expect(() => bench.run((step) => cancelTasks(step, "1", [2]))).toThrow(
      new InvalidRequestError("tasks", "job 1 has 2 tasks (0-1): no task 2"),
    );
  });
});
