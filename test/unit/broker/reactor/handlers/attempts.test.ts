// The life of an attempt as the server sees it (handlers/attempts.ts), as pure handlers
// (test/helpers/handler-bench.ts): the start an agent is sent (its command, size, devices and
// limits), the stop it is sent (the recorded intent, or one that follows from the job's flags),
// and an end moving the task on.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${param}` is the job file's placeholder

import { describe, expect, it } from "vitest";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import {
  endAttempt,
  sendStop,
  startMessage,
  stopAttempt,
} from "../../../../../src/broker/reactor/handlers/attempts.ts";
import { holdJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { rankStartMessage } from "../../../../../src/broker/reactor/handlers/gangs.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { newAttempt } from "../../../../../src/common/model/new-records.ts";
import type { AttemptRecord } from "../../../../../src/common/model/records.ts";
import { ended, facts, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/** A job submitted on a bench (not placed), and a new attempt of its task `taskIndex` on h1 (and h2, for two ranks). */
function submitted(spec: Record<string, unknown>, taskIndex = 0, hosts: string[] = ["h1"]) {
  const bench = new HandlerBench();
  const job = bench.run((step) =>
    submitJob(step, {
      id: "7",
      spec: validateJobSpec(spec),
      owner: "alice",
      inputs: ["in.dat"],
    }),
  ).result;
  const attempt = newAttempt({ ...job.tasks[taskIndex], attempts: 1 }, hosts, bench.now);
  return { bench, job, attempt };
}

describe("the start an agent is sent", () => {
  it("says what the job file and the attempt say, and leaves out what is not asked for", () => {
    const { job, attempt } = submitted({
      command: "work --fast",
      env: { MODE: "x" },
      outputs: ["out.txt"],
      resources: { cpus: 2 },
      checkpoint: { intervalSeconds: 90, graceSeconds: 15 },
    });
    expect(startMessage(job, attempt)).toEqual({
      type: "start",
      jobId: "7",
      taskIndex: 0,
      attempt: 1,
      owner: "alice",
      restarted: false,
      command: "work --fast",
      env: { MODE: "x" },
      inputs: ["in.dat"],
      outputs: ["out.txt"],
      cpus: 2,
      timeLimitSeconds: null,
      graceSeconds: 15,
      checkpointIntervalSeconds: 90,
    });
  });

  it("gives the memory, the process limit, the devices and the countable resources asked for", () => {
    const sized = submitted({
      command: "work",
      resources: { memoryMb: 512, maxProcesses: 20, custom: { license: 2 } },
      timeLimitSeconds: 600,
    });
    expect(startMessage(sized.job, sized.attempt)).toMatchObject({
      memoryMb: 512,
      maxProcesses: 20,
      resources: { license: 2 },
      timeLimitSeconds: 600,
    });
    // The attempt's memory, grown after running out of it, over the job's.
    sized.attempt.memoryMb = 1024;
    expect(startMessage(sized.job, sized.attempt).memoryMb).toBe(1024);

    const ranks = submitted({ command: "work", nodes: 2, resources: { gpus: 1 } }, 0, ["h1", "h2"]);
    ranks.attempt.placement = [
      { host: "h1", rank: 0, gpus: ["0"] },
      { host: "h2", rank: 1, gpus: ["3"] },
    ];
    expect(startMessage(ranks.job, ranks.attempt).gpus).toEqual(["0"]);
    expect(startMessage(ranks.job, ranks.attempt, 1).gpus).toEqual(["3"]);
    ranks.attempt.placement = [
      { host: "h1", rank: 0, gpus: [] },
      { host: "h2", rank: 1 },
    ];
    expect(startMessage(ranks.job, ranks.attempt)).not.toHaveProperty("gpus");
    expect(startMessage(ranks.job, ranks.attempt, 1)).not.toHaveProperty("gpus");

    const none = submitted({ command: "work", resources: { custom: {} } });
    const message = startMessage(none.job, none.attempt);
    for (const key of ["memoryMb", "maxProcesses", "gpus", "resources"])
      expect(message).not.toHaveProperty(key);
  });

  it("puts an array task's parameter into its command and environment", () => {
    const { job, attempt } = submitted(
      { command: "work ${param}", env: { WHAT: "${param}" }, array: { params: ["a", "b"] } },
      1,
    );
    const message = startMessage(job, attempt);
    expect(message).toMatchObject({ taskIndex: 1, command: "work b", env: { WHAT: "b" } });
  });

  it("sends the URL inputs (s3: ones too) and the outputs to push apart from those the server keeps", () => {
    const { job, attempt } = submitted(
      {
        command: "work",
        inputs: [{ url: "s3://climate/runs/grid.nc" }, { url: "https://h/a", as: "b" }],
        outputs: ["kept.txt", { path: "o.csv", to: "s3://results/${param.run}/o.csv" }],
        array: { params: [{ run: "r 1" }, { run: "r/2" }] },
      },
      1,
    );
    const message = startMessage(job, attempt);
    expect(message.urlInputs).toStrictEqual([
      { url: "s3://climate/runs/grid.nc", as: "grid.nc" },
      { url: "https://h/a", as: "b" },
    ]);
    expect(message.outputs).toStrictEqual(["kept.txt"]);
    expect(message.urlOutputs).toStrictEqual([{ path: "o.csv", to: "s3://results/r%2F2/o.csv" }]);
    expect(startMessage(submitted({ command: "work", outputs: ["a"] }).job, attempt)).not.toHaveProperty(
      "urlOutputs",
    );
  });

  it("has only rank 0 of a gang push its outputs", () => {
    const { bench, job, attempt } = submitted(
      { command: "work", nodes: 2, outputs: ["kept", { path: "o", to: "https://h/o" }] },
      0,
      ["h1", "h2"],
    );
    bench.run((step) => {
      const first = rankStartMessage(step, job, attempt, 0, null);
      const second = rankStartMessage(step, job, attempt, 1, "h1:1");
      expect(first).toMatchObject({ outputs: ["kept"], urlOutputs: [{ path: "o", to: "https://h/o" }] });
      expect(second).toMatchObject({ outputs: [] });
      expect(second).not.toHaveProperty("urlOutputs");
    });
  });
});

describe("the stop an agent is sent", () => {
  /** A job started on h1 whose job record has `flags`, its attempt made stopping with no intent recorded. */
  function stopping(flags: { cancelRequested?: boolean; held?: boolean }) {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1")));
    const job = bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", checkpoint: { graceSeconds: 5 } }),
        owner: "alice",
        inputs: [],
      }),
    ).result;
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h1", { jobId: job.id, taskIndex: 0, attempt: 1 }));
    Object.assign(job.record, flags);
    const attempt: AttemptRecord = job.attempt(0, 1)!;
    bench.effects = [];
    bench.run((step) => sendStop(step, job, attempt));
    return bench.stops();
  }

  it("follows from the job's flags for an attempt stopped before intents were recorded", () => {
    const stop = { host: "h1", type: "stop", jobId: "1", taskIndex: 0, attempt: 1, graceSeconds: 5 };
    expect(stopping({ cancelRequested: true, held: true })).toEqual([
      { ...stop, outcome: "cancelled", reason: "cancelled by user" },
    ]);
    expect(stopping({ held: true })).toEqual([{ ...stop, outcome: "preempted", reason: "held" }]);
    expect(stopping({})).toEqual([{ ...stop, outcome: "migrated", reason: "migrating to another host" }]);
  });
});

/** A bench with host h1 (and any `more`) attached and a job of `spec` submitted and placed, its first attempts started. */
function running(spec: Record<string, unknown>, more: string[] = []) {
  const bench = new HandlerBench();
  for (const name of ["h1", ...more]) bench.run((step) => attachHost(step, hello(name, [], 4)));
  const job = bench.run((step) =>
    submitJob(step, { id: "1", spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
  ).result;
  bench.schedule();
  for (const start of bench.starts()) bench.run((step) => attemptStarted(step, start.host, start));
  return { bench, job };
}

/** The kinds of a job's events whose attempt ended, in order. */
const endKinds = (bench: HandlerBench, jobId: string) =>
  bench
    .events(jobId)
    .map((event) => event.kind)
    .filter((kind) => kind.startsWith("attempt.") && kind !== "attempt.placed");

describe("asking an attempt to stop", () => {
  it("does nothing to an attempt stopping already, or ended", () => {
    const { bench, job } = running({ command: "work" });
    bench.run((step) => holdJob(step, job.id));
    const attempt = job.attempt(0, 1)!;
    const stop = attempt.stop;
    bench.effects = [];
    const changes = bench.recorded.length;
    bench.run((step) =>
      stopAttempt(step, job, attempt, { outcome: "cancelled", reason: { kind: "user-cancel" } }),
    );
    expect(bench.stops()).toEqual([]);
    expect(attempt.stop).toBe(stop);
    bench.run((step) => attemptEnded(step, "h1", ended(job.id, 1, "preempted")));
    const ended1 = bench.recorded.length;
    bench.run((step) =>
      stopAttempt(step, job, attempt, { outcome: "cancelled", reason: { kind: "user-cancel" } }),
    );
    expect(bench.recorded.length).toBe(ended1);
    expect(bench.stops()).toEqual([]);
    expect(changes).toBeGreaterThan(0);
  });
});

describe("an attempt's end", () => {
  it("counts a loss without a cause as the host's, not as a system failure", () => {
    const { bench, job } = running({ command: "work", retry: { maxAttempts: 3 } });
    bench.run((step) =>
      endAttempt(step, job, job.attempt(0, 1)!, { outcome: "lost", exitCode: null, reason: null }),
    );
    expect(job.tasks[0]).toMatchObject({ losses: 1, systemFailures: 0 });
  });

  it("tells of an array task's end only when it did not succeed, naming the array", () => {
    const { bench, job } = running({ command: "work", array: { count: 2 } });
    bench.run((step) => attemptEnded(step, "h1", ended(job.id, 1, "succeeded", { taskIndex: 0 })));
    expect(endKinds(bench, job.id)).toEqual([]);
    bench.run((step) => attemptEnded(step, "h1", ended(job.id, 1, "failed", { taskIndex: 1 })));
    expect(bench.events(job.id).filter((event) => event.kind === "attempt.failed")).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ task: 1, array: true }) }),
    ]);
    // A single task's success is told, not as an array's.
    const single = running({ command: "work" });
    single.bench.run((step) => attemptEnded(step, "h1", ended(single.job.id, 1)));
    expect(single.bench.events(single.job.id).filter((event) => event.kind === "attempt.succeeded")).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ array: false }) }),
    ]);
  });

  it("forgets the progress its task reported", () => {
    const { bench, job } = running({ command: "work", retry: { maxAttempts: 2 } });
    bench.heartbeat("h1", facts("h1"), [{ jobId: job.id, taskIndex: 0, attempt: 1, fraction: 0.4 }]);
    expect(job.progress.has(0)).toBe(true);
    bench.run((step) => attemptEnded(step, "h1", ended(job.id, 1, "failed")));
    expect(job.progress.has(0)).toBe(false);
  });

  it("gives a task killed for its memory limit more memory for its retry, and its event says how much", () => {
    const { bench, job } = running({
      command: "work",
      resources: { memoryMb: 100 },
      retry: { maxAttempts: 3, memoryGrowth: 2 },
    });
    bench.run((step) => attemptEnded(step, "h1", ended(job.id, 1, "failed", { cause: "oom" })));
    expect(job.tasks[0].memoryMb).toBe(200);
    const event = bench.events(job.id).find((each) => each.kind === "attempt.failed");
    expect(event?.data.next).toMatchObject({ is: "retry", memoryMb: 200 });
  });
});

describe("a replica's end", () => {
  /** A job of two replicas of one task, attempt 1 on slow h1 and attempt 2 on fast h2, both running. */
  function replicated(spec: Record<string, unknown> = {}) {
    const bench = new HandlerBench();
    const host = (name: string, speed: number) => ({
      ...hello(name, [], 1),
      facts: facts(name, { speed, slotsFree: 1 }),
    });
    bench.run((step) => attachHost(step, host("h1", 0.1)));
    const job = bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", replicas: 2, ...spec }),
        owner: "alice",
        inputs: [],
      }),
    ).result;
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h1", { jobId: job.id, taskIndex: 0, attempt: 1 }));
    bench.run((step) => attachHost(step, host("h2", 4)));
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h2", { jobId: job.id, taskIndex: 0, attempt: 2 }));
    expect(bench.starts().map((start) => [start.host, start.attempt])).toEqual([
      ["h1", 1],
      ["h2", 2],
    ]);
    return { bench, job };
  }

  it("counts a system failure against the task while the other replica runs", () => {
    const { bench, job } = replicated({ retry: { maxAttempts: 3 } });
    bench.run((step) => attemptEnded(step, "h2", ended(job.id, 2, "lost", { cause: "staging" })));
    expect(job.tasks[0]).toMatchObject({ state: "running", systemFailures: 1, losses: 0, failures: 0 });
  });

  it("writes the task again only when its counts change", () => {
    const { bench, job } = replicated();
    const tasksWritten = () => bench.recorded.filter((change) => change.op === "putTasks").length;
    const before = tasksWritten();
    bench.run((step) => attemptEnded(step, "h2", ended(job.id, 2, "cancelled")));
    expect(job.tasks[0].state).toBe("running");
    expect(tasksWritten()).toBe(before);
  });

  it("ends as reported when the task has its result but the attempt had no stop recorded (an earlier version's)", () => {
    const { bench, job } = replicated();
    bench.run((step) => attemptEnded(step, "h2", ended(job.id, 2)));
    expect(job.tasks[0].state).toBe("succeeded");
    const loser = job.attempt(0, 1)!;
    expect(loser.state).toBe("stopping");
    loser.stop = null;
    const told = endKinds(bench, job.id).length;
    bench.run((step) => attemptEnded(step, "h1", ended(job.id, 1, "failed", { reason: "late" })));
    expect(loser).toMatchObject({ state: "ended", outcome: "failed", reason: "late" });
    expect(endKinds(bench, job.id).length).toBe(told);
  });
});
