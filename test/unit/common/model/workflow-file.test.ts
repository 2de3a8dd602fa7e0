// Workflow files (model/workflow.ts): names, references, cycles and each job file checked as a
// submit checks it, every refusal naming its field; the order jobs are made in; the workflow's
// state from its jobs'.

import { describe, expect, it } from "vitest";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";
import type { JobState } from "../../../../src/common/model/states.ts";
import {
  findCycle,
  isWorkflowFile,
  topologicalOrder,
  validateWorkflowFile,
  withJobIds,
  workflowState,
} from "../../../../src/common/model/workflow.ts";
import { isWorkflowId } from "../../../../src/common/model/workflow-id.ts";

const job = (dependsOn: unknown[] = [], extra: Record<string, unknown> = {}) => ({
  command: "true",
  dependsOn,
  ...extra,
});

describe("validateWorkflowFile refuses, naming the field", () => {
  it.each<[string, unknown, string]>([
    ["not a mapping", [1], "a workflow file must be a mapping with `jobs`"],
    ["an unknown key", { jobs: { a: job() }, command: "x" }, "command: unknown key"],
    ["jobs not a mapping", { jobs: [job()] }, "jobs: a mapping of job names to job files"],
    ["no job", { jobs: {} }, "jobs: a workflow has at least one job"],
    ["a bad name", { jobs: { "1a": job() } }, "jobs.1a: a job's name is a letter or _ then"],
    ["a name with a slash", { jobs: { "a/b": job() } }, "jobs.a/b: a job's name"],
    ["a job file's unknown key", { jobs: { a: job([], { colour: 1 }) } }, "jobs.a.colour: unknown key"],
    ["a job file's missing command", { jobs: { a: {} } }, "jobs.a.command:"],
    [
      "a job file that is not a mapping",
      { jobs: { a: "true" } },
      "jobs.a: a job file must be a mapping of fields",
    ],
    [
      "an unknown name",
      { jobs: { a: job(), c: job(["a", "x"]) } },
      "jobs.c.dependsOn[1]: no job named x in the workflow",
    ],
    [
      "an unknown name in a kind",
      { jobs: { a: job([{ job: "zz", when: "ended" }]) } },
      "jobs.a.dependsOn[0]: no job named zz in the workflow",
    ],
    [
      "a job id outside the workflow",
      { jobs: { a: job(["12"]) } },
      "jobs.a.dependsOn[0]: no job named 12 in the workflow",
    ],
    ["a job on itself", { jobs: { a: job(["a"]) } }, "jobs.a.dependsOn[0]: cycle: a -> a"],
    ["a cycle of two", { jobs: { a: job(["b"]), b: job(["a"]) } }, "jobs.a.dependsOn[0]: cycle: a -> b -> a"],
    [
      "a cycle past a root",
      { jobs: { r: job(), a: job(["r", "c"]), b: job(["a"]), c: job(["b"]) } },
      "jobs.a.dependsOn[1]: cycle: a -> c -> b -> a",
    ],
    [
      "tasks: same with arrays of different sizes",
      {
        jobs: {
          a: job([], { array: { count: 3 } }),
          b: job([{ job: "a", tasks: "same" }], { array: { count: 4 } }),
        },
      },
      "jobs.b.dependsOn[0].tasks: tasks: same needs as many tasks as job a: this job has 4, job a has 3",
    ],
  ])("%s", (_, input, message) => {
    expect(() => validateWorkflowFile(input)).toThrow(JobFileError);
    expect(() => validateWorkflowFile(input)).toThrow(message);
  });
});

describe("validateWorkflowFile refuses, with exactly this message", () => {
  const jobs = (count: number) =>
    Object.fromEntries(Array.from({ length: count }, (_, i) => [`j${i}`, job()]));
  it.each<[string, unknown, string]>([
    ["null is not a mapping", null, "a workflow file must be a mapping with `jobs`"],
    ["text is not a mapping", "jobs", "a workflow file must be a mapping with `jobs`"],
    ["a list is not a mapping", [{ jobs: {} }], "a workflow file must be a mapping with `jobs`"],
    ["an unknown key like none: no suggestion", { jobs: { a: job() }, zzzzzz: 1 }, "zzzzzz: unknown key"],
    [
      "an unknown key near a known one",
      { jobs: { a: job() }, job: 1 },
      "job: unknown key (did you mean jobs?)",
    ],
    [
      "a name that is not a string",
      { name: 5, jobs: { a: job() } },
      "name: a workflow's name is a string of 1 to 200 characters",
    ],
    [
      "an empty name",
      { name: "", jobs: { a: job() } },
      "name: a workflow's name is a string of 1 to 200 characters",
    ],
    [
      "a name of 201 characters",
      { name: "n".repeat(201), jobs: { a: job() } },
      "name: a workflow's name is a string of 1 to 200 characters",
    ],
    ["no jobs", { name: "w" }, "jobs: a mapping of job names to job files"],
    ["jobs null", { jobs: null }, "jobs: a mapping of job names to job files"],
    ["jobs as text", { jobs: "a" }, "jobs: a mapping of job names to job files"],
    ["20,001 jobs", { jobs: jobs(20_001) }, "jobs: at most 20000 jobs in a workflow, this one has 20001"],
    [
      "a job's error under its name, with the job file's own path",
      { jobs: { a: job(), b: job([], { resources: { cpus: 0 } }) } },
      "jobs.b.resources.cpus: Too small: expected number to be >=1",
    ],
  ])("%s", (_, input, message) => {
    let thrown: unknown;
    try {
      validateWorkflowFile(input);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(JobFileError);
    expect((thrown as JobFileError).message).toBe(message);
  });

  it.each<[string, unknown, string | null, number]>([
    ["no name", { jobs: { a: job() } }, null, 1],
    ["a null name is none", { name: null, jobs: { a: job() } }, null, 1],
    ["a name of one character", { name: "w", jobs: { a: job() } }, "w", 1],
    ["a name of 200 characters", { name: "n".repeat(200), jobs: { a: job() } }, "n".repeat(200), 1],
    ["20,000 jobs", { jobs: jobs(20_000) }, null, 20_000],
    [
      "arrays of different sizes when the wait is for the whole job",
      { jobs: { a: job([], { array: { count: 3 } }), b: job(["a"], { array: { count: 4 } }) } },
      null,
      2,
    ],
  ])("accepts %s", (_, input, name, count) => {
    const file = validateWorkflowFile(input);
    expect([file.name, file.jobs.length]).toEqual([name, count]);
  });
});

describe("validateWorkflowFile accepts", () => {
  it("a diamond, in an order where each job comes after those it depends on", () => {
    const file = validateWorkflowFile({
      name: "diamond",
      jobs: { d: job(["b", "c"]), b: job(["a"]), c: job([{ job: "a", when: "ended" }]), a: job() },
    });
    expect(file.name).toBe("diamond");
    expect(file.jobs.map((each) => each.name)).toEqual(["a", "b", "c", "d"]);
    expect(file.jobs[2].dependsOn).toEqual([{ name: "a", when: "ended", sameTasks: false }]);
  });

  it("a job's own name as its name unless its file gives one, and dependsOn as ids", () => {
    const file = validateWorkflowFile({
      jobs: {
        a: job([], { array: { count: 2 } }),
        b: job(["a", { job: "a", when: "failed" }, { job: "a", tasks: "same" }], {
          array: { count: 2 },
          name: "bee",
        }),
      },
    });
    const ids = new Map([
      ["a", "7"],
      ["b", "8"],
    ]);
    expect(withJobIds(file.jobs[0], ids).name).toBe("a");
    const b = withJobIds(file.jobs[1], ids);
    expect(b.name).toBe("bee");
    expect(b.dependsOn).toEqual([
      "7",
      { job: "7", when: "failed" },
      { job: "7", when: "succeeded", tasks: "same" },
    ]);
  });
});

describe("the graph's rules", () => {
  it.each<[string, [string, string[]][], string[] | null]>([
    ["no edge", [["a", []]], null],
    [
      "a chain",
      [
        ["a", []],
        ["b", ["a"]],
        ["c", ["b"]],
      ],
      null,
    ],
    [
      "a diamond",
      [
        ["a", []],
        ["b", ["a"]],
        ["c", ["a"]],
        ["d", ["b", "c"]],
      ],
      null,
    ],
    ["a self loop", [["a", ["a"]]], ["a", "a"]],
    [
      "a loop of three",
      [
        ["a", ["c"]],
        ["b", ["a"]],
        ["c", ["b"]],
      ],
      ["a", "c", "b", "a"],
    ],
  ])("findCycle: %s", (_, graph, cycle) => {
    const jobs = graph.map(([name, on]) => ({ name, dependsOn: on.map((each) => ({ name: each })) }));
    expect(findCycle(jobs)).toEqual(cycle);
  });

  it("findCycle walks a chain of 20,000 without running out of stack", () => {
    const jobs = Array.from({ length: 20_000 }, (_, i) => ({
      name: `j${i}`,
      dependsOn: i === 0 ? [] : [{ name: `j${i - 1}` }],
    }));
    expect(findCycle(jobs)).toBeNull();
    expect(topologicalOrder(jobs.toReversed())[0].name).toBe("j0");
  });

  it.each<[string, [string, string[]][], string[]]>([
    [
      "file order when free",
      [
        ["x", []],
        ["y", []],
      ],
      ["x", "y"],
    ],
    [
      "after dependencies",
      [
        ["d", ["b"]],
        ["b", ["a"]],
        ["a", []],
      ],
      ["a", "b", "d"],
    ],
    [
      "a fan-out and in",
      [
        ["sink", ["m1", "m2"]],
        ["m1", ["root"]],
        ["m2", ["root"]],
        ["root", []],
      ],
      ["root", "m1", "m2", "sink"],
    ],
  ])("topologicalOrder: %s", (_, graph, order) => {
    const jobs = graph.map(([name, on]) => ({ name, dependsOn: on.map((each) => ({ name: each })) }));
    expect(topologicalOrder(jobs).map((each) => each.name)).toEqual(order);
  });

  it.each<[string, [string, string[]][], string[]]>([
    [
      "a job named twice in one dependsOn waits for it once",
      [
        ["b", ["a", "a"]],
        ["a", []],
      ],
      ["a", "b"],
    ],
    [
      "a job waits for each of the jobs it depends on",
      [
        ["a", []],
        ["x", ["b"]],
        ["b", []],
        ["c", ["a", "x"]],
      ],
      ["a", "b", "x", "c"],
    ],
    [
      "a job that becomes ready comes after those ready before it",
      [
        ["c", ["a"]],
        ["a", []],
        ["b", []],
      ],
      ["a", "b", "c"],
    ],
  ])("topologicalOrder: %s", (_, graph, order) => {
    const jobs = graph.map(([name, on]) => ({ name, dependsOn: on.map((each) => ({ name: each })) }));
    expect(topologicalOrder(jobs).map((each) => each.name)).toEqual(order);
  });

  it("topologicalOrder refuses a cycle, naming the jobs it could not order", () => {
    const jobs = [
      { name: "r", dependsOn: [] },
      { name: "a", dependsOn: [{ name: "b" }] },
      { name: "b", dependsOn: [{ name: "a" }] },
    ];
    expect(() => topologicalOrder(jobs)).toThrow(new Error("topologicalOrder: a cycle among a, b"));
  });

  it("an error of a job file that is not the file's own passes through as it is", () => {
    const failing = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new RangeError("unreadable");
        },
      },
    );
    expect(() => validateWorkflowFile({ jobs: { a: failing } })).toThrow(new RangeError("unreadable"));
  });

  it("withJobIds refuses a dependency without an id", () => {
    const file = validateWorkflowFile({ jobs: { a: job(), b: job(["a"]) } });
    expect(() => withJobIds(file.jobs[1], new Map([["b", "8"]]))).toThrow(
      new Error("withJobIds: no id for a"),
    );
  });

  it.each<[string, unknown[], unknown[]]>([
    ["succeeded, whole job: the bare id", ["a"], ["7"]],
    ["ended, whole job", [{ job: "a", when: "ended" }], [{ job: "7", when: "ended" }]],
    [
      "failed, task by task",
      [{ job: "a", when: "failed", tasks: "same" }],
      [{ job: "7", when: "failed", tasks: "same" }],
    ],
  ])("withJobIds: %s", (_, dependsOn, expected) => {
    const file = validateWorkflowFile({ jobs: { a: job(), b: job(dependsOn) } });
    expect(withJobIds(file.jobs[1], new Map([["a", "7"]])).dependsOn).toEqual(expected);
  });

  it.each<[string, [string, string[]][], string[] | null]>([
    [
      "a cycle reached from a job done before",
      [
        ["a", ["b"]],
        ["b", []],
        ["c", ["d"]],
        ["d", ["b", "c"]],
      ],
      ["c", "d", "c"],
    ],
    [
      "a cycle past its first job: from where it starts",
      [
        ["x", ["y"]],
        ["y", ["z"]],
        ["z", ["y"]],
      ],
      ["y", "z", "y"],
    ],
    [
      "a cycle after a first dependency done: the next one's",
      [
        ["a", ["b", "c"]],
        ["b", ["x"]],
        ["x", []],
        ["c", ["a"]],
      ],
      ["a", "c", "a"],
    ],
    [
      "a job reached twice, not a cycle",
      [
        ["a", ["b", "c"]],
        ["b", ["c"]],
        ["c", []],
      ],
      null,
    ],
  ])("findCycle: %s", (_, graph, cycle) => {
    const jobs = graph.map(([name, on]) => ({ name, dependsOn: on.map((each) => ({ name: each })) }));
    expect(findCycle(jobs)).toEqual(cycle);
  });

  it.each<[string, (JobState | undefined)[], JobState]>([
    ["all succeeded", ["succeeded", "succeeded"], "succeeded"],
    ["one running", ["succeeded", "running", "waiting"], "running"],
    ["one pending", ["succeeded", "pending", "waiting"], "pending"],
    ["one held", ["held", "waiting"], "held"],
    ["waiting only", ["succeeded", "waiting"], "waiting"],
    ["a failure, all ended", ["succeeded", "failed", "cancelled"], "failed"],
    ["cancelled, all ended", ["succeeded", "cancelled"], "cancelled"],
    ["a job removed", ["succeeded", undefined], "cancelled"],
    ["a job removed beside one running", [undefined, "running"], "running"],
    ["running before pending before held", ["held", "pending", "running"], "running"],
    ["pending before held", ["held", "pending"], "pending"],
    ["a failure among the ended, one still waiting", ["failed", "waiting"], "waiting"],
    ["a failure before a cancellation", ["cancelled", "failed"], "failed"],
  ])("workflowState: %s", (_, states, state) => {
    expect(workflowState(states)).toBe(state);
  });

  it.each<[unknown, boolean]>([
    [{ jobs: {} }, true],
    [{ command: "x" }, false],
    [{ jobs: null }, true],
    [null, false],
    ["jobs", false],
    [42, false],
    [["jobs"], false],
  ])("isWorkflowFile(%j) is %s", (input, is) => {
    expect(isWorkflowFile(input)).toBe(is);
  });

  it.each<[string, boolean]>([
    ["flow-1", true],
    ["flow-120", true],
    ["flow-0", false],
    ["flow-", false],
    ["12", false],
  ])("isWorkflowId(%s) is %s", (id, is) => {
    expect(isWorkflowId(id)).toBe(is);
  });
});
