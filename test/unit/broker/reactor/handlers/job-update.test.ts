// Updating a job not yet running: the rule of which job takes which fields (a table), the update's
// shape, the new job file checked as a submit's with the same messages, and the handler as a pure
// function: (state, update) -> the job file replaced, its queue place, its event, a pass; refused
// with the job's state for a running one; and what a broker rebuilds from the changes.

import { describe, expect, it } from "vitest";
import { ConflictError, NotFoundError } from "../../../../../src/broker/reactor/errors.ts";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { applyPlan } from "../../../../../src/broker/reactor/handlers/apply-plan.ts";
import { holdJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { retryJob } from "../../../../../src/broker/reactor/handlers/retry.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { updateJob } from "../../../../../src/broker/reactor/handlers/update.ts";
import { ClusterState } from "../../../../../src/broker/state/cluster-state.ts";
import { updateOf } from "../../../../../src/cli/commands/update.ts";
import { renderEvent } from "../../../../../src/common/model/events.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import {
  FIELDS_WHILE_RUNNING,
  type JobUpdate,
  parseJobUpdate,
  type UpdateFacts,
  updatedSpec,
  updateRefusal,
} from "../../../../../src/common/model/job-update.ts";
import { JobFileError } from "../../../../../src/common/model/jobfile-error.ts";
import { parseQosFile } from "../../../../../src/common/model/qos-file.ts";
import type { UpdateField } from "../../../../../src/common/model/update-fields.ts";
import { ended, facts, hello } from "../../../../helpers/agent-messages.ts";
import { Harness, submitOn } from "../../../../helpers/core-harness.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

const queued: UpdateFacts = {
  id: "7",
  state: "pending",
  cancelRequested: false,
  tasks: 1,
  liveTasks: 0,
  startedTasks: 0,
};

describe("updateRefusal", () => {
  const all: UpdateField[] = [
    "priority",
    "qos",
    "requirements",
    "rank",
    "resources.cpus",
    "resources.memoryMb",
    "timeLimitSeconds",
  ];
  const cases: [string, Partial<UpdateFacts>, UpdateField[], string | null][] = [
    ["a pending job takes any field", {}, all, null],
    ["a waiting job takes any field", { state: "waiting" }, all, null],
    ["a held job takes any field", { state: "held" }, all, null],
    [
      "a running job is refused, naming its state",
      { state: "running", liveTasks: 1, startedTasks: 1 },
      ["priority"],
      "job 7 is running: only a job that has not started can be updated (hold it first: its attempt stops, and resumes from its checkpoint on release)",
    ],
    [
      "an ended job is refused, naming its state",
      { state: "succeeded", startedTasks: 1 },
      ["priority"],
      "job 7 is succeeded: an ended job cannot be updated (submit it again)",
    ],
    [
      "a cancelled one too",
      { state: "cancelled" },
      ["rank"],
      "job 7 is cancelled: an ended job cannot be updated (submit it again)",
    ],
    [
      "a job being cancelled is refused",
      { state: "running", cancelRequested: true, liveTasks: 1 },
      ["priority"],
      "job 7 is being cancelled: it cannot be updated",
    ],
    [
      "an array with tasks running takes a new priority for the tasks not yet started",
      { state: "running", tasks: 10, liveTasks: 2, startedTasks: 4 },
      ["priority"],
      null,
    ],
    [
      "an array with tasks running keeps what they were placed with",
      { state: "running", tasks: 10, liveTasks: 2, startedTasks: 4 },
      ["priority", "requirements", "resources.memoryMb"],
      "job 7 is running (2 of 10 tasks): only priority and array.parallel may change while its tasks run, not requirements, resources.memoryMb, which its running tasks were placed with (hold it first, or update it once they end)",
    ],
    [
      "an array with tasks running takes a new throttle with its priority",
      { state: "running", tasks: 10, liveTasks: 2, startedTasks: 4 },
      ["priority", "array.parallel"],
      null,
    ],
    [
      "an array whose tasks have run takes a new throttle",
      { state: "pending", tasks: 10, startedTasks: 4 },
      ["array.parallel"],
      null,
    ],
    [
      "a single job takes no throttle, whatever its state",
      { state: "pending" },
      ["array.parallel"],
      "job 7 is not an array: array.parallel applies to arrays only",
    ],
    [
      "a job whose attempts have ended (held, or back in the queue) takes a new memory and requirements",
      { state: "held", startedTasks: 1 },
      ["requirements", "resources.memoryMb", "timeLimitSeconds", "rank", "priority"],
      null,
    ],
    [
      "but not new cpus: its ended attempts' cpu time counts at the job's",
      { state: "pending", tasks: 3, startedTasks: 2 },
      ["priority", "resources.cpus"],
      "job 7 has tasks that have run: resources.cpus cannot change (their cpu time is counted at the job's cpus); submit it again instead",
    ],
  ];
  it.each(cases)("%s", (_, facts, fields, expected) => {
    expect(updateRefusal({ ...queued, ...facts }, fields)).toBe(expected);
  });

  it("lets only the priority change while tasks run", () => {
    expect(FIELDS_WHILE_RUNNING).toEqual(["priority", "array.parallel"]);
  });
});

describe("parseJobUpdate", () => {
  const refused: [string, unknown, string][] = [
    [
      "an unknown field",
      { command: "x" },
      "command: an update may change only priority, qos, requirements, rank, resources.cpus, resources.memoryMb, timeLimitSeconds and array.parallel",
    ],
    [
      "an unknown resource",
      { resources: { gpus: 1 } },
      "resources.gpus: an update may change only priority, qos, requirements, rank, resources.cpus, resources.memoryMb, timeLimitSeconds and array.parallel",
    ],
    [
      "nothing to change",
      {},
      "nothing to change: give at least one of priority, qos, requirements, rank, resources.cpus, resources.memoryMb, timeLimitSeconds and array.parallel",
    ],
    ["a wrong type", { priority: "high" }, "priority: Invalid input: expected number, received string"],
    ["not a mapping", [1], "an update is a mapping of the fields to change"],
    [
      "an array's count",
      { array: { count: 3 } },
      "array.count: an update may change only priority, qos, requirements, rank, resources.cpus, resources.memoryMb, timeLimitSeconds and array.parallel",
    ],
    ["a throttle of 0", { array: { parallel: 0 } }, "array.parallel: Too small"],
  ];
  it.each(refused)("refuses %s, naming the field", (_, input, message) => {
    expect(() => parseJobUpdate(input)).toThrow(JobFileError);
    expect(() => parseJobUpdate(input)).toThrow(message);
  });

  it("takes the fields it may change, null removing an expression", () => {
    const update = { priority: 5, requirements: null, resources: { memoryMb: 100 } };
    expect(parseJobUpdate(update)).toEqual(update);
    expect(parseJobUpdate({ qos: "high" })).toEqual({ qos: "high" });
    expect(() => parseJobUpdate({ qos: null })).toThrow("qos: ");
  });
});

/** Three comprehensions over a host's labels, one inside the other: over the cost limit. */
const COSTLY = "host.labels.all(a, host.labels.all(b, host.labels.all(c, a != b || b != c)))";

describe("updatedSpec", () => {
  const spec = validateJobSpec({ command: "run", requirements: 'host.name == "a"', timeLimitSeconds: 60 });

  /** The message a submit of the same job file gets. */
  function submitMessage(file: Record<string, unknown>): string {
    try {
      validateJobSpec(file);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error("the submit was accepted");
  }

  const bad: [string, JobUpdate, Record<string, unknown>][] = [
    ["an unknown host fact", { requirements: "host.nme == 1.0" }, { requirements: "host.nme == 1.0" }],
    ["a requirements that is no boolean", { requirements: "host.speed" }, { requirements: "host.speed" }],
    ["a rank that is no number", { rank: 'host.name == "a"' }, { rank: 'host.name == "a"' }],
    ["an expression over the cost limit", { requirements: COSTLY }, { requirements: COSTLY }],
    ["no cpus", { resources: { cpus: 0 } }, { resources: { cpus: 0 } }],
    ["negative memory", { resources: { memoryMb: -1 } }, { resources: { memoryMb: -1 } }],
    ["a time limit of no time", { timeLimitSeconds: -5 }, { timeLimitSeconds: -5 }],
    ["a priority that is not whole", { priority: 1.5 }, { priority: 1.5 }],
    ["an empty QoS tier", { qos: "" }, { qos: "" }],
  ];
  it.each(bad)("refuses %s with the submit's message", (_, update, file) => {
    const expected = submitMessage({ command: "run", ...file });
    expect(expected).toMatch(/^(requirements|rank|resources\.\w+|timeLimitSeconds|priority|qos): /);
    expect(() => updatedSpec(spec, update)).toThrow(JobFileError);
    expect(() => updatedSpec(spec, update)).toThrow(expected);
  });

  it("changes what it names, keeps the rest, and removes what it sets to null", () => {
    const next = updatedSpec(spec, { priority: 3, requirements: null, resources: { memoryMb: 512 } });
    expect(next).toEqual({
      ...spec,
      priority: 3,
      requirements: undefined,
      resources: { ...spec.resources, memoryMb: 512 },
    });
    expect("requirements" in next).toBe(false);
    expect(updatedSpec(spec, { timeLimitSeconds: null }).timeLimitSeconds).toBeUndefined();
  });
});

function bench(hosts: string[], slots = 1): HandlerBench {
  const b = new HandlerBench();
  for (const name of hosts) b.run((step) => attachHost(step, hello(name, [], slots)));
  return b;
}

function submit(b: HandlerBench, id: string, spec: Record<string, unknown>, owner = "alice"): void {
  b.run((step) => submitJob(step, { id, spec: validateJobSpec(spec), owner, inputs: [] }));
}

function update(b: HandlerBench, id: string, change: JobUpdate, by = "alice") {
  return b.run((step) => updateJob(step, { id, update: change, by }));
}

describe("updateJob", () => {
  it("places a job held back by requirements that match no host once they match one", () => {
    const b = bench(["h1", "h2"]);
    submit(b, "1", { command: "run", requirements: 'host.name == "nowhere"' });
    b.schedule();
    expect(b.starts()).toEqual([]);
    const handled = update(b, "1", { requirements: 'host.name == "h2"' });
    // A pass follows, as after a submit, and sees the new requirements.
    expect(handled.schedule).toBe(true);
    expect(handled.changes.map((change) => change.op)).toEqual(["putJob", "addEvent"]);
    b.settle();
    expect(b.starts()).toMatchObject([{ jobId: "1", host: "h2" }]);
    expect(b.events("1").find((event) => event.kind === "updated")).toMatchObject({
      kind: "updated",
      message: 'updated by alice: requirements host.name == "nowhere" -> host.name == "h2"',
    });
  });

  it("moves a job up its owner's queue when its priority is raised", () => {
    const b = bench(["h1"]);
    submit(b, "1", { command: "busy" });
    b.schedule();
    for (const id of ["2", "3", "4"]) submit(b, id, { command: `wait ${id}` });
    update(b, "4", { priority: 5 });
    expect(b.state.jobs.get("4")?.priority).toBe(5);
    b.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
    b.run((step) => attemptEnded(step, "h1", ended("1", 1)));
    b.settle();
    expect(b.starts().map((start) => start.jobId)).toEqual(["1", "4"]);
    // Lowered again, it goes back behind the others.
    update(b, "3", { priority: -1 });
    b.run((step) => attemptStarted(step, "h1", { jobId: "4", taskIndex: 0, attempt: 1 }));
    b.run((step) => attemptEnded(step, "h1", ended("4", 1)));
    b.settle();
    expect(b.starts().map((start) => start.jobId)).toEqual(["1", "4", "2"]);
  });

  it("refuses a running job with its state, and changes nothing", () => {
    const b = bench(["h1"]);
    submit(b, "1", { command: "run" });
    b.schedule();
    b.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
    const before = b.recorded.length;
    expect(() => update(b, "1", { priority: 9 })).toThrow(ConflictError);
    expect(() => update(b, "1", { priority: 9 })).toThrow(
      "job 1 is running: only a job that has not started",
    );
    expect(b.recorded.length).toBe(before);
    expect(b.state.jobs.get("1")?.priority).toBe(0);
    expect(() => update(b, "9", { priority: 1 })).toThrow(NotFoundError);
  });

  it("refuses a bad expression with the submit's message, and changes nothing", () => {
    const b = bench(["h1"]);
    submit(b, "1", { command: "run", requirements: 'host.name == "x"' });
    const before = b.recorded.length;
    expect(() => update(b, "1", { requirements: "host.nme == 1.0" })).toThrow(
      "requirements: CEL: No such key: nme",
    );
    expect(b.recorded.length).toBe(before);
    expect(b.state.jobs.get("1")?.record.spec.requirements).toBe('host.name == "x"');
  });

  it("gives an array with tasks running a new priority, and refuses what its running tasks hold", () => {
    const b = bench(["h1"]);
    submit(b, "1", { command: "run", array: { count: 3 } });
    b.schedule();
    expect(b.starts()).toHaveLength(1);
    update(b, "1", { priority: 4 });
    expect(b.state.jobs.get("1")?.priority).toBe(4);
    expect(() => update(b, "1", { resources: { memoryMb: 100 } })).toThrow(
      "job 1 is running (1 of 3 tasks): only priority and array.parallel may change while its tasks run, not resources.memoryMb",
    );
  });

  it("raises and lowers an array's throttle while its tasks run: more start, or fewer, from the next pass", () => {
    const b = bench(["h1"], 8);
    submit(b, "1", { command: "run", array: { count: 10, parallel: 2 } });
    b.settle();
    expect(b.starts()).toHaveLength(2);
    const handled = update(b, "1", { array: { parallel: 5 } });
    expect(handled.schedule).toBe(true);
    b.settle();
    expect(b.starts()).toHaveLength(5);
    expect(b.events("1").find((event) => event.kind === "updated")?.message).toBe(
      "updated by alice: array.parallel 2 -> 5",
    );
    // Lowered below what runs: none is stopped, none starts until fewer run.
    update(b, "1", { array: { parallel: 3 } });
    for (const start of b.starts().slice(0, 2)) {
      b.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: start.taskIndex, attempt: 1 }));
      b.run((step) => attemptEnded(step, "h1", ended("1", 1, "succeeded", { taskIndex: start.taskIndex })));
    }
    b.settle();
    expect(b.starts()).toHaveLength(5);
    // Removed: the rest start.
    update(b, "1", { array: { parallel: null } });
    b.settle();
    expect(b.starts()).toHaveLength(10);
    expect(b.state.jobs.get("1")?.record.spec.array).toEqual({ count: 10 });
  });

  it("refuses a throttle for a single job", () => {
    const b = bench(["h1"]);
    submit(b, "1", { command: "run" });
    expect(() => update(b, "1", { array: { parallel: 2 } })).toThrow("job 1 is not an array");
  });

  it("answers the job unchanged, with no event, when the update changes nothing", () => {
    const b = bench([]);
    submit(b, "1", { command: "run", priority: 2 });
    const handled = update(b, "1", { priority: 2 });
    expect(handled.changes).toEqual([]);
    expect(handled.schedule).toBe(false);
  });

  it("gives a held job that ran new requirements and memory: they replace the requirements it wrote and its grown memory", () => {
    const b = bench(["h1", "h2"]);
    submit(b, "1", {
      command: "run",
      resources: { memoryMb: 100 },
      retry: { maxAttempts: 3, backoffSeconds: 0, memoryGrowth: 2 },
    });
    b.schedule();
    const first = b.starts()[0];
    b.run((step) => attemptStarted(step, first.host, { jobId: "1", taskIndex: 0, attempt: 1 }));
    b.run((step) =>
      attemptEnded(step, first.host, ended("1", 1, "failed", { cause: "oom", reason: "out of memory" })),
    );
    expect(b.state.jobs.get("1")?.tasks[0].memoryMb).toBe(200);
    b.run((step) => holdJob(step, "1"));
    update(b, "1", { resources: { memoryMb: 1000 }, requirements: 'host.name == "h2"' });
    const job = b.state.jobs.get("1")!;
    expect(job.tasks[0].memoryMb).toBeNull();
    expect(job.memoryMb).toBe(1000);
    expect(renderEvent({ kind: "updated", data: { by: "bob", changes: [] } })).toBe("updated by bob: ");
  });
});

describe("updateJob: what it checks, keeps and resets", () => {
  /** Places task `taskIndex` of job `jobId` on h1 by hand, starts it, and ends it as `outcome` says. */
  function runOnce(
    b: HandlerBench,
    jobId: string,
    taskIndex: number,
    outcome: "succeeded" | "failed" | "oom",
  ): void {
    b.run((step) =>
      applyPlan(step, { place: [{ kind: "task", jobId, taskIndex, host: "h1" }], stop: [], preempt: [] }),
    );
    const attempt = b.state.jobs.get(jobId)!.tasks[taskIndex].attempts;
    b.run((step) => attemptStarted(step, "h1", { jobId, taskIndex, attempt }));
    const end =
      outcome === "oom"
        ? ended(jobId, attempt, "failed", { cause: "oom", reason: "out of memory", taskIndex })
        : ended(jobId, attempt, outcome, { taskIndex });
    b.run((step) => attemptEnded(step, "h1", end));
  }

  it("refuses new cpus for a job whose tasks have run and stopped, naming why", () => {
    const held = bench(["h1"]);
    submit(held, "2", { command: "run", retry: { maxAttempts: 2, backoffSeconds: 0 } });
    runOnce(held, "2", 0, "failed");
    expect(held.state.jobs.get("2")?.tasks[0]).toMatchObject({ state: "pending", attempts: 1 });
    expect(() => update(held, "2", { resources: { cpus: 2 } })).toThrow(
      "job 2 has tasks that have run: resources.cpus cannot change (their cpu time is counted at the job's cpus); submit it again instead",
    );
    // Its memory may change.
    update(held, "2", { resources: { memoryMb: 64 } });
    expect(held.state.jobs.get("2")?.memoryMb).toBe(64);
  });

  it("checks the tier against who asks only when the update names one", () => {
    const policy = parseQosFile("tiers:\n  normal: {}\n  high:\n    priority: 10\n");
    const b = new HandlerBench(new ClusterState({}, policy));
    b.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "run", qos: "high" }),
        owner: "alice",
        inputs: [],
      }),
    );
    b.run((step) =>
      submitJob(step, { id: "2", spec: validateJobSpec({ command: "run" }), owner: "alice", inputs: [] }),
    );
    const asAlice = (id: string, change: JobUpdate) =>
      b.run((step) => updateJob(step, { id, update: change, by: "alice", allowedQos: ["normal"] }));
    // A job an admin put in "high" takes a new priority from alice, whose token allows "normal" only.
    asAlice("1", { priority: 3 });
    expect(b.state.jobs.get("1")?.priority).toBe(3);
    expect(() => asAlice("2", { qos: "high" })).toThrow(
      "qos: user alice may not use QoS high; their token allows normal",
    );
    expect(b.state.jobs.get("2")?.qos).toBe("normal");
  });

  it("drops the requirements the job wrote when new ones are given, and keeps them otherwise", () => {
    const b = bench(["h1"]);
    submit(b, "1", {
      command: "run",
      requirements: "host.cpus > 0",
      retry: { maxAttempts: 2, backoffSeconds: 0 },
    });
    b.run((step) =>
      applyPlan(step, {
        place: [{ kind: "task", jobId: "1", taskIndex: 0, host: "h1" }],
        stop: [],
        preempt: [],
      }),
    );
    b.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
    b.heartbeat("h1", facts("h1"), [], [{ jobId: "1", taskIndex: 0, attempt: 1, text: 'host.name == "h1"' }]);
    const job = b.state.jobs.get("1")!;
    expect(job.record.dynamicRequirements).toBe('host.name == "h1"');
    b.run((step) => attemptEnded(step, "h1", ended("1", 1, "failed")));
    update(b, "1", { priority: 2 });
    expect(job.record.dynamicRequirements).toBe('host.name == "h1"');
    update(b, "1", { requirements: 'host.name != "h9"' });
    expect(job.record.dynamicRequirements).toBeNull();
    expect(job.requirements?.source).toBe('host.name != "h9"');
  });

  it("gives the memory asked to tasks not started whose memory grew, pending or waiting, and to no other", () => {
    const b = bench(["h1"], 2);
    const memory = {
      resources: { memoryMb: 100 },
      retry: { maxAttempts: 2, backoffSeconds: 0, memoryGrowth: 2 },
    };
    submit(b, "A", { command: "first", array: { count: 3 } });
    submit(b, "B", {
      command: "then",
      array: { count: 3 },
      dependsOn: [{ job: "A", when: "ended", tasks: "same" }],
      ...memory,
    });
    runOnce(b, "A", 0, "failed");
    // B's task 0 runs out of memory twice (it fails, its memory grown once), and is retried with A's task 0.
    runOnce(b, "B", 0, "oom");
    runOnce(b, "B", 0, "oom");
    runOnce(b, "A", 1, "succeeded");
    // B's task 1 runs out of memory once (pending again, grown); then it runs again and succeeds.
    runOnce(b, "B", 1, "oom");
    runOnce(b, "B", 1, "succeeded");
    b.run((step) => retryJob(step, { id: "A", by: "alice", tasks: [0] }));
    b.run((step) => retryJob(step, { id: "B", by: "alice", tasks: [0] }));
    // And task 2 runs out of memory once: pending, its memory grown.
    runOnce(b, "A", 2, "succeeded");
    runOnce(b, "B", 2, "oom");
    const job = b.state.jobs.get("B")!;
    expect(job.tasks.map((task) => [task.state, task.memoryMb])).toEqual([
      ["waiting", 200],
      ["succeeded", 200],
      ["pending", 200],
    ]);
    // A new priority leaves the memory as it grew; a new memory with no task grown writes no task.
    const priority = update(b, "B", { priority: 2 });
    expect(priority.changes.map((change) => change.op)).toEqual(["putJob", "addEvent"]);
    expect(job.tasks.map((task) => task.memoryMb)).toEqual([200, 200, 200]);
    const handled = update(b, "B", { resources: { memoryMb: 1000 } });
    expect(job.tasks.map((task) => task.memoryMb)).toEqual([null, 200, null]);
    expect(
      handled.changes.flatMap((change) =>
        change.op === "putTasks" ? change.tasks.map((task) => task.index) : [],
      ),
    ).toEqual([0, 2]);
    const again = update(b, "B", { resources: { memoryMb: 2000 } });
    expect(again.changes.map((change) => change.op)).toEqual(["putJob", "addEvent"]);
  });

  it("forgets the room a preemption kept for the job: the next pass chooses again", () => {
    const b = bench(["h1"]);
    submit(b, "v", { command: "victim" });
    b.run((step) =>
      applyPlan(step, {
        place: [{ kind: "task", jobId: "v", taskIndex: 0, host: "h1" }],
        stop: [],
        preempt: [],
      }),
    );
    b.run((step) => attemptStarted(step, "h1", { jobId: "v", taskIndex: 0, attempt: 1 }));
    submit(b, "w", { command: "waits" });
    b.run((step) =>
      applyPlan(step, {
        place: [],
        stop: [],
        preempt: [
          {
            stop: {
              jobId: "v",
              taskIndex: 0,
              attempt: 1,
              intent: { outcome: "preempted", reason: { kind: "held" } },
            },
            place: { kind: "task", jobId: "w", taskIndex: 0, host: "h1" },
          },
        ],
      }),
    );
    expect(b.state.reservations.get("w", 0)).toBeDefined();
    update(b, "w", { priority: 1 });
    expect(b.state.reservations.get("w", 0)).toBeUndefined();
  });
});

describe("an updated job rebuilt from the recorded changes", () => {
  it("is the live job, placed by its new values after a restart", () => {
    const b = bench([]);
    b.run((step) => attachHost(step, { ...hello("h1", [], 1), facts: facts("h1") }));
    submit(b, "1", { command: "run", requirements: 'host.name == "h2"' });
    submit(b, "2", { command: "other" });
    update(b, "2", {
      priority: -3,
      rank: "host.speed",
      timeLimitSeconds: 30,
      resources: { cpus: 1, memoryMb: 50 },
    });
    update(b, "1", { priority: 7, requirements: 'host.name == "h1"' });
    const restarted = b.restart();
    restarted.run((step) => attachHost(step, hello("h1", [], 1)));
    for (const id of ["1", "2"]) {
      const live = b.state.jobs.get(id)!;
      const recovered = restarted.state.jobs.get(id)!;
      expect(recovered.record).toEqual(live.record);
      expect(recovered.requirements?.source).toBe(live.requirements?.source);
      expect(recovered.rank?.source).toBe(live.rank?.source);
    }
    // The recovered state places the updated job first, on the host its new requirements name.
    restarted.schedule();
    expect(restarted.starts()).toMatchObject([{ jobId: "1", host: "h1" }]);
  });
});

describe("an update through the core, on SQLite", () => {
  it("is in the store when it is answered: a restarted core reads the new values and the event", async () => {
    const harness = new Harness();
    try {
      const core = await harness.start();
      const job = await submitOn(
        core,
        validateJobSpec({ command: "run", requirements: 'host.name == "nowhere"' }),
        "alice",
        [],
      );
      await core.jobs.update(job.id, { priority: 6, requirements: 'host.name == "h9"' }, "alice");
      const restarted = await harness.restart();
      const recovered = restarted.read.job(job.id);
      expect(recovered.record).toMatchObject({
        priority: 6,
        spec: { priority: 6, requirements: 'host.name == "h9"' },
      });
      expect(recovered.requirements?.source).toBe('host.name == "h9"');
      expect((await harness.store.events(job.id)).map((event) => event.message)).toContain(
        'updated by alice: priority 0 -> 6; requirements host.name == "nowhere" -> host.name == "h9"',
      );
    } finally {
      await harness.close();
    }
  });
});

describe("steward update's options as the update it sends", () => {
  const cases: [string, Parameters<typeof updateOf>[0], JobUpdate][] = [
    ["a priority", { priority: -2 }, { priority: -2 }],
    ["an expression", { requirements: 'host.name == "b"' }, { requirements: 'host.name == "b"' }],
    ['"" removes an expression', { requirements: "", rank: " " }, { requirements: null, rank: null }],
    ["0 removes the time limit", { timeLimit: 0 }, { timeLimitSeconds: null }],
    ["a time limit", { timeLimit: 90 }, { timeLimitSeconds: 90 }],
    ["cpus and memory, under resources", { cpus: 2, memoryMb: 0 }, { resources: { cpus: 2, memoryMb: 0 } }],
    ["memory alone", { memoryMb: 512 }, { resources: { memoryMb: 512 } }],
    ["an array's throttle", { parallel: 8 }, { array: { parallel: 8 } }],
    ["0 removes the throttle", { parallel: 0 }, { array: { parallel: null } }],
    ["nothing", { json: true }, {}],
  ];
  it.each(cases)("%s", (_, options, expected) => {
    expect(updateOf(options)).toEqual(expected);
  });
});
