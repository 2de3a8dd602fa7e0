// Workflows through the handlers (pure functions over the state): a workflow's jobs are made in one
// step, each after those it depends on, naming their workflow; they run in the graph's order; a
// failure cancels what waits on it; the workflow's retry reruns the failed job and its cancelled
// dependants (waiting again) and keeps what succeeded; a retry with nothing to rerun changes nothing.

import { describe, expect, it } from "vitest";
import { ConflictError, type NotFoundError, QuotaError } from "../../../../../src/broker/reactor/errors.ts";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { cancelJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { createToken } from "../../../../../src/broker/reactor/handlers/tokens.ts";
import {
  retryWorkflow,
  submitWorkflow,
  workflowRetryCandidates,
} from "../../../../../src/broker/reactor/handlers/workflows.ts";
import { ClusterState } from "../../../../../src/broker/state/cluster-state.ts";
import { stillWaitingAt } from "../../../../../src/broker/state/dependency-verdicts.ts";
import type { StoredJob } from "../../../../../src/broker/store/store.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { parseQosFile } from "../../../../../src/common/model/qos-file.ts";
import { newTokenOf } from "../../../../../src/common/model/tokens.ts";
import { validateWorkflowFile } from "../../../../../src/common/model/workflow.ts";
import { ended, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

const DIAMOND = {
  name: "diamond",
  jobs: {
    a: { command: "a" },
    b: { command: "b", dependsOn: ["a"] },
    c: { command: "c", dependsOn: ["a"] },
    d: { command: "d", dependsOn: ["b", "c"] },
  },
};
const IDS = new Map([
  ["a", "1"],
  ["b", "2"],
  ["c", "3"],
  ["d", "4"],
]);

function diamond(): HandlerBench {
  const bench = new HandlerBench();
  bench.run((step) => attachHost(step, hello("h1", [], 8)));
  bench.run((step) =>
    submitWorkflow(step, { id: "flow-1", file: validateWorkflowFile(DIAMOND), owner: "alice", ids: IDS }),
  );
  return bench;
}

const stateOf = (bench: HandlerBench, id: string) => bench.state.header(id)?.state;
const states = (bench: HandlerBench) => ["1", "2", "3", "4"].map((id) => stateOf(bench, id));

/** Places what may start and reports each start; answers the job ids started. */
function startReady(bench: HandlerBench): string[] {
  const from = bench.starts().length;
  bench.schedule();
  const started = bench.starts().slice(from);
  for (const start of started)
    bench.run((step) =>
      attemptStarted(step, start.host, {
        jobId: start.jobId,
        taskIndex: start.taskIndex,
        attempt: start.attempt,
      }),
    );
  return started.map((start) => start.jobId).sort();
}

function end(bench: HandlerBench, id: string, outcome: "succeeded" | "failed"): void {
  const attempt = bench.state.jobs.get(id)!.latestAttempt(0)!;
  bench.run((step) => attemptEnded(step, "h1", ended(id, attempt.number, outcome)));
}

/** The jobs that left memory, as the store holds them (what the retry command reads first). */
function storedJobs(bench: HandlerBench, ids: string[]): Map<string, StoredJob> {
  const snapshot = bench.stored();
  return new Map(
    ids
      .filter((id) => !bench.state.jobs.has(id))
      .map((id) => [
        id,
        structuredClone({
          job: snapshot.jobs.find((job) => job.id === id)!,
          tasks: snapshot.tasks.filter((task) => task.jobId === id),
          attempts: snapshot.attempts.filter((attempt) => attempt.jobId === id),
          checkpointParts: [],
        }),
      ]),
  );
}

describe("a workflow's submit", () => {
  it("makes every job in one step, each after those it depends on, naming its workflow", () => {
    const bench = new HandlerBench();
    const handled = bench.run((step) =>
      submitWorkflow(step, { id: "flow-1", file: validateWorkflowFile(DIAMOND), owner: "alice", ids: IDS }),
    );
    const puts = handled.changes.filter((change) => change.op === "putJob").map((change) => change.job.id);
    expect(puts).toEqual(["1", "2", "3", "4"]);
    expect(handled.changes[0]).toMatchObject({
      op: "putWorkflow",
      workflow: { id: "flow-1", owner: "alice" },
    });
    expect(handled.result.workflow.jobs.map((member) => [member.name, member.job])).toEqual([...IDS]);
    expect(bench.state.jobs.get("4")?.record).toMatchObject({
      name: "d",
      workflow: { id: "flow-1", name: "d" },
      spec: { dependsOn: ["2", "3"] },
    });
    expect(states(bench)).toEqual(["pending", "waiting", "waiting", "waiting"]);
  });

  it("answers a repeated submit (the same owner's key) with the workflow made, making nothing", () => {
    const bench = new HandlerBench();
    const file = validateWorkflowFile(DIAMOND);
    bench.run((step) =>
      submitWorkflow(step, { id: "flow-1", file, owner: "alice", ids: IDS, submitKey: "k" }),
    );
    const again = bench.run((step) =>
      submitWorkflow(step, {
        id: "flow-2",
        file,
        owner: "alice",
        ids: new Map([...IDS].map(([n, id]) => [n, `9${id}`])),
        submitKey: "k",
      }),
    );
    expect(again.result.workflow.id).toBe("flow-1");
    expect(again.result.jobs).toEqual([]);
    expect(again.changes).toEqual([]);
    // Another owner's same key is theirs.
    const bob = bench.run((step) =>
      submitWorkflow(step, {
        id: "flow-3",
        file,
        owner: "bob",
        ids: new Map([...IDS].map(([n, id]) => [n, `8${id}`])),
        submitKey: "k",
      }),
    );
    expect(bob.result.workflow.id).toBe("flow-3");
    // The key comes back with the workflow after a restart.
    expect(bench.recovered().workflowSubmissions.size).toBe(2);
  });

  it("refuses a workflow id made before, changing nothing", () => {
    const bench = diamond();
    const before = bench.recorded.length;
    expect(() =>
      bench.run((step) =>
        submitWorkflow(step, {
          id: "flow-1",
          file: validateWorkflowFile({ jobs: { x: { command: "x" } } }),
          owner: "alice",
          ids: new Map([["x", "9"]]),
        }),
      ),
    ).toThrow(ConflictError);
    expect(bench.recorded.length).toBe(before);
    expect(bench.state.jobs.has("9")).toBe(false);
  });
});

describe("a workflow's run and retry", () => {
  it("runs in the graph's order; a failure cancels d; the retry reruns b and d only", () => {
    const bench = diamond();
    expect(startReady(bench)).toEqual(["1"]);
    end(bench, "1", "succeeded");
    expect(startReady(bench)).toEqual(["2", "3"]);
    end(bench, "2", "failed");
    end(bench, "3", "succeeded");
    expect(states(bench)).toEqual(["succeeded", "failed", "succeeded", "cancelled"]);
    expect(startReady(bench)).toEqual([]);

    const workflow = bench.state.workflows.get("flow-1")!;
    const candidates = bench.run((step) => workflowRetryCandidates(step, workflow)).result;
    expect(candidates.map((member) => member.name)).toEqual(["b", "d"]);
    const handled = bench.run((step) =>
      retryWorkflow(step, { id: "flow-1", by: "alice", stored: storedJobs(bench, ["2", "4"]) }),
    );
    expect(handled.result.retried.map(({ name, tasks }) => [name, tasks])).toEqual([
      ["b", [0]],
      ["d", [0]],
    ]);
    const retriedEvents = handled.changes.filter(
      (change) => change.op === "addEvent" && change.event.kind === "retried",
    );
    expect(retriedEvents.map((change) => change.op === "addEvent" && change.event.message)).toEqual([
      "retried by alice with workflow flow-1",
      "retried by alice with workflow flow-1",
    ]);
    expect(states(bench)).toEqual(["succeeded", "pending", "succeeded", "waiting"]);

    expect(startReady(bench)).toEqual(["2"]);
    end(bench, "2", "succeeded");
    expect(startReady(bench)).toEqual(["4"]);
    end(bench, "4", "succeeded");
    expect(states(bench)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
    // a and c ran once; b twice; d once (it never started before the retry).
    const attempts = (id: string) => bench.starts().filter((start) => start.jobId === id).length;
    expect(["1", "2", "3", "4"].map(attempts)).toEqual([1, 2, 1, 1]);
  });

  it.each<[string, (bench: HandlerBench) => void, string, typeof ConflictError | typeof NotFoundError]>([
    [
      "nothing failed yet",
      () => {},
      "workflow flow-1 has no failed or cancelled job to retry",
      ConflictError,
    ],
    [
      "all succeeded",
      (bench) => {
        for (const group of [["1"], ["2", "3"], ["4"]]) {
          startReady(bench);
          for (const id of group) end(bench, id, "succeeded");
        }
      },
      "workflow flow-1 has no failed or cancelled job to retry",
      ConflictError,
    ],
  ])("a retry when %s is refused and changes nothing", (_, before, message, kind) => {
    const bench = diamond();
    before(bench);
    const recorded = bench.recorded.length;
    expect(() => bench.run((step) => retryWorkflow(step, { id: "flow-1", by: "alice" }))).toThrow(kind);
    expect(() => bench.run((step) => retryWorkflow(step, { id: "flow-1", by: "alice" }))).toThrow(message);
    expect(bench.recorded.length).toBe(recorded);
  });

  it("a retry of an unknown workflow is not found", () => {
    const bench = diamond();
    expect(() => bench.run((step) => retryWorkflow(step, { id: "flow-9", by: "alice" }))).toThrow(
      "no workflow flow-9",
    );
  });

  it("a retry whose failed job left memory and was not read is refused, changing nothing", () => {
    const bench = diamond();
    startReady(bench);
    end(bench, "1", "failed");
    const recorded = bench.recorded.length;
    expect(() => bench.run((step) => retryWorkflow(step, { id: "flow-1", by: "alice" }))).toThrow(
      "job 1 (a) could not be read",
    );
    expect(bench.recorded.length).toBe(recorded);
  });
});

describe("stillWaitingAt: a fan-in looks past the dependencies that ended, from where it stopped", () => {
  /** Jobs 1..4 (1 and 2 ended as given), and job 9 waiting on them as `dependsOn` says. */
  function fanIn(dependsOn: unknown[], ends: [string, "succeeded" | "failed"][]) {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1", [], 8)));
    const jobs: Record<string, unknown> = {
      j1: { command: "1" },
      j2: { command: "2" },
      j3: { command: "3" },
    };
    const file = validateWorkflowFile({ jobs: { ...jobs, j9: { command: "9", dependsOn } } });
    const ids = new Map([
      ["j1", "1"],
      ["j2", "2"],
      ["j3", "3"],
      ["j9", "9"],
    ]);
    bench.run((step) => submitWorkflow(step, { id: "flow-1", file, owner: "alice", ids }));
    startReady(bench);
    for (const [id, outcome] of ends) end(bench, id, outcome);
    return bench;
  }

  it.each<[string, unknown[], [string, "succeeded" | "failed"][], string, number, number]>([
    ["the first ended, the next waits", ["j1", "j2", "j3"], [["1", "succeeded"]], "1", 0, 1],
    ["the hint is kept while it waits", ["j1", "j2", "j3"], [["1", "succeeded"]], "1", 2, 2],
    ["from the hint round to one before it", ["j1", "j2", "j3"], [["2", "succeeded"]], "2", 1, 2],
    ["none left waiting: worked out in full", ["j1"], [["1", "succeeded"]], "1", 0, -1],
    ["the one ended can never be met", ["j1", "j2"], [["1", "failed"]], "1", 0, -1],
    [
      "an ended kind met (when: failed) and another waits",
      [{ job: "j1", when: "failed" }, "j2"],
      [["1", "failed"]],
      "1",
      0,
      1,
    ],
    [
      "tasks: same is worked out in full",
      [{ job: "j1", tasks: "same" }, "j2"],
      [["1", "succeeded"]],
      "1",
      0,
      -1,
    ],
  ])("%s", (_, dependsOn, ends, ended, hint, at) => {
    const bench = fanIn(dependsOn, ends);
    const job = bench.state.jobs.get("9");
    // A job whose dependency can never be met was cancelled and left memory already: worked out in full then.
    if (!job) return expect(at).toBe(-1);
    expect(stillWaitingAt(bench.state, job.dependencies, ended, hint)).toBe(at);
  });
});

describe("a workflow under the QoS policy", () => {
  const POLICY = parseQosFile(`
tiers:
  normal:
    maxQueuedTasks: 5
  high:
    priority: 10
`);
  const file = (jobs: Record<string, unknown>) => validateWorkflowFile({ jobs });
  const ids = new Map([
    ["a", "1"],
    ["b", "2"],
    ["c", "3"],
  ]);
  function refusal(bench: HandlerBench, jobs: Record<string, unknown>, allowedQos: string[] | null) {
    try {
      bench.run((step) =>
        submitWorkflow(step, { id: "flow-1", file: file(jobs), owner: "alice", ids, allowedQos }),
      );
    } catch (error) {
      return error as Error & { status?: number; field?: string };
    }
    return null;
  }

  it("refuses a job of a tier the token does not allow, naming the job, and makes nothing", () => {
    const bench = new HandlerBench(new ClusterState({}, POLICY));
    const error = refusal(
      bench,
      { a: { command: "a" }, b: { command: "b", qos: "high", dependsOn: ["a"] } },
      ["normal"],
    );
    expect(error?.message).toBe("jobs.b.qos: user alice may not use QoS high; their token allows normal");
    expect([bench.state.jobs.size, bench.state.workflows.size, bench.stored().jobs.length]).toEqual([
      0, 0, 0,
    ]);
  });

  it("counts the workflow's jobs together against a queued-task limit (429), and makes nothing", () => {
    const bench = new HandlerBench(new ClusterState({}, POLICY));
    const error = refusal(
      bench,
      {
        a: { command: "a", array: 2 },
        b: { command: "b", array: 2, dependsOn: ["a"] },
        c: { command: "c", array: 2, dependsOn: ["b"] },
      },
      ["normal"],
    );
    expect(error).toBeInstanceOf(QuotaError);
    expect(error?.message).toMatch(/^user alice has 4 tasks queued .* the limit is 5; this job adds 2$/);
    expect(error?.field).toMatch(/^jobs\.c\./);
    expect([bench.state.jobs.size, bench.state.workflows.size]).toEqual([0, 0]);
    // Within the limit, and a tier an admin gives: made.
    expect(
      refusal(bench, { a: { command: "a", array: 2 }, b: { command: "b", qos: "high" } }, null),
    ).toBeNull();
    expect(bench.state.jobs.size).toBe(2);
  });
});

describe("a workflow's record and jobs", () => {
  it("records its name, owner, time, key and each job's dependencies by name; gives each job its inputs", () => {
    const bench = new HandlerBench();
    const file = validateWorkflowFile({
      name: "pair",
      jobs: {
        a: { command: "a", array: 2 },
        b: { command: "b", array: 2, dependsOn: [{ job: "a", when: "ended", tasks: "same" }] },
      },
    });
    const ids = new Map([
      ["a", "1"],
      ["b", "2"],
    ]);
    const made = bench.run((step) =>
      submitWorkflow(step, {
        id: "flow-1",
        file,
        owner: "alice",
        ids,
        submitKey: "k1",
        inputs: new Map([["b", ["blob-1"]]]),
      }),
    ).result;
    expect(made.workflow).toEqual({
      id: "flow-1",
      name: "pair",
      owner: "alice",
      createdAt: bench.now,
      submitKey: "k1",
      jobs: [
        { name: "a", job: "1", dependsOn: [] },
        { name: "b", job: "2", dependsOn: [{ name: "a", when: "ended", sameTasks: true }] },
      ],
    });
    expect(made.jobs.map((job) => job.record.inputs)).toEqual([[], ["blob-1"]]);
  });

  it("refuses a workflow id taken, naming it; a file naming a job without an id is the caller's error", () => {
    const bench = diamond();
    const file = validateWorkflowFile({ jobs: { x: { command: "x" }, y: { command: "y" } } });
    expect(() =>
      bench.run((step) => submitWorkflow(step, { id: "flow-1", file, owner: "alice", ids: new Map() })),
    ).toThrow(new ConflictError("workflow flow-1 exists already"));
    expect(() =>
      bench.run((step) =>
        submitWorkflow(step, { id: "flow-2", file, owner: "alice", ids: new Map([["x", "9"]]) }),
      ),
    ).toThrow("submitWorkflow: no id for job y");
    expect(bench.state.workflows.has("flow-2")).toBe(false);
  });
});

describe("a workflow's jobs counted together", () => {
  const POLICY = parseQosFile(`
tiers:
  normal:
    maxQueuedTasks: 5
  high:
    priority: 10
groups:
  physics:
    maxQueuedTasks: 8
`);
  const ids = new Map([
    ["a", "1"],
    ["b", "2"],
    ["c", "3"],
  ]);
  /** A bench under POLICY where alice is of the group physics. */
  function physics(): HandlerBench {
    const bench = new HandlerBench(new ClusterState({}, POLICY));
    bench.run((step) =>
      createToken(step, {
        token: newTokenOf("api"),
        subject: "alice",
        role: "user",
        pool: null,
        createdBy: "admin",
        expiresAt: null,
        group: "physics",
      }),
    );
    return bench;
  }
  const submitted = (bench: HandlerBench, jobs: Record<string, unknown>) =>
    bench.run((step) =>
      submitWorkflow(step, { id: "flow-1", file: validateWorkflowFile({ jobs }), owner: "alice", ids }),
    );

  it("by tier against a tier's limit: another tier's jobs do not count", () => {
    const bench = physics();
    submitted(bench, {
      a: { command: "a", array: 2 },
      b: { command: "b", array: 3, qos: "high" },
      c: { command: "c", array: 3 },
    });
    expect(bench.state.jobs.size).toBe(3);
  });

  it("all tiers together against the group's limit", () => {
    const bench = physics();
    expect(() =>
      submitted(bench, {
        a: { command: "a", array: 2 },
        b: { command: "b", array: 4, qos: "high" },
        c: { command: "c", array: 3, qos: "high" },
      }),
    ).toThrow(QuotaError);
    expect(bench.state.jobs.size).toBe(0);
  });

  it("a retry likewise: the tasks the jobs before it retry count as queued, by tier and in all", () => {
    const bench = physics();
    bench.run((step) => attachHost(step, hello("h1", [], 8)));
    // Three jobs that do not wait for each other, all failing: then each retried.
    submitted(bench, {
      a: { command: "a", array: 2 },
      b: { command: "b", array: 3, qos: "high" },
      c: { command: "c", array: 3 },
    });
    bench.schedule();
    for (const start of bench.starts())
      bench.run((step) =>
        attemptEnded(
          step,
          start.host,
          ended(start.jobId, start.attempt, "failed", { taskIndex: start.taskIndex }),
        ),
      );
    bench.schedule();
    for (const start of bench.starts().slice(6))
      bench.run((step) =>
        attemptEnded(
          step,
          start.host,
          ended(start.jobId, start.attempt, "failed", { taskIndex: start.taskIndex }),
        ),
      );
    expect(states3(bench)).toEqual(["failed", "failed", "failed"]);
    const stored = storedJobs(bench, ["1", "2", "3"]);
    // One more task queued, of another tier: the group's limit is passed.
    bench.run((step) =>
      submitJob(step, {
        id: "9",
        spec: validateJobSpec({ command: "x", qos: "high" }),
        owner: "alice",
        inputs: [],
      }),
    );
    expect(() => bench.run((step) => retryWorkflow(step, { id: "flow-1", by: "alice", stored }))).toThrow(
      QuotaError,
    );
    bench.run((step) => cancelJob(step, "9"));
    bench.run((step) => retryWorkflow(step, { id: "flow-1", by: "alice", stored }));
    expect(states3(bench)).toEqual(["pending", "pending", "pending"]);
  });

  it("a retry counts the tasks the jobs before it retry in their tier against the tier's limit", () => {
    const bench = physics();
    bench.run((step) => attachHost(step, hello("h1", [], 8)));
    submitted(bench, {
      a: { command: "a", array: 2 },
      b: { command: "b", array: 3, qos: "high" },
      c: { command: "c", array: 3 },
    });
    bench.schedule();
    // a and c fail, b succeeds.
    for (const start of bench.starts())
      bench.run((step) =>
        attemptEnded(
          step,
          start.host,
          ended(start.jobId, start.attempt, start.jobId === "2" ? "succeeded" : "failed", {
            taskIndex: start.taskIndex,
          }),
        ),
      );
    expect(states3(bench)).toEqual(["failed", "succeeded", "failed"]);
    bench.run((step) =>
      submitJob(step, { id: "9", spec: validateJobSpec({ command: "x" }), owner: "alice", inputs: [] }),
    );
    // 1 queued, a's 2 and c's 3: 6 in the tier normal, over its 5.
    const stored = storedJobs(bench, ["1", "3"]);
    expect(() => bench.run((step) => retryWorkflow(step, { id: "flow-1", by: "alice", stored }))).toThrow(
      QuotaError,
    );
  });

  it("a retry is refused a tier the one who asks may not use, naming the job", () => {
    const bench = physics();
    bench.run((step) => attachHost(step, hello("h1", [], 8)));
    submitted(bench, { a: { command: "a", qos: "high" } });
    bench.schedule();
    bench.run((step) => attemptEnded(step, "h1", ended("1", 1, "failed")));
    const stored = storedJobs(bench, ["1"]);
    expect(() =>
      bench.run((step) => retryWorkflow(step, { id: "flow-1", by: "alice", stored, allowedQos: ["normal"] })),
    ).toThrow("jobs.a.qos: user alice may not use QoS high; their token allows normal");
    bench.run((step) => retryWorkflow(step, { id: "flow-1", by: "alice", stored, allowedQos: ["high"] }));
    expect(bench.state.jobs.get("1")?.record.state).toBe("pending");
  });
});

const states3 = (bench: HandlerBench) => ["1", "2", "3"].map((id) => bench.state.header(id)?.state);

describe("a workflow's submit and retry, more", () => {
  it("a submit without a key is never taken for one made with the key 'null'", () => {
    const bench = new HandlerBench();
    const file = validateWorkflowFile({ jobs: { x: { command: "x" } } });
    bench.run((step) =>
      submitWorkflow(step, {
        id: "flow-1",
        file,
        owner: "alice",
        ids: new Map([["x", "1"]]),
        submitKey: "null",
      }),
    );
    const second = bench.run((step) =>
      submitWorkflow(step, { id: "flow-2", file, owner: "alice", ids: new Map([["x", "2"]]) }),
    );
    expect(second.result.workflow.id).toBe("flow-2");
  });

  it("a retry in the step its job failed in, the job still in memory, needs no stored copy", () => {
    const bench = diamond();
    startReady(bench);
    const retried = bench.run((step) => {
      attemptEnded(step, "h1", ended("1", 1, "failed"));
      return retryWorkflow(step, { id: "flow-1", by: "alice" });
    }).result;
    // a failed, and b, c and d, which waited for it, were cancelled: all in memory still.
    expect(retried.retried.map(({ name, tasks }) => [name, tasks])).toEqual([
      ["a", [0]],
      ["b", [0]],
      ["c", [0]],
      ["d", [0]],
    ]);
    expect(bench.state.jobs.get("1")?.record.state).toBe("pending");
  });
});
