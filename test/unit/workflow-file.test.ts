// Workflow files (model/workflow.ts): names, references, cycles and each job file checked as a
// submit checks it, every refusal naming its field; the order jobs are made in; the workflow's
// state from its jobs'.

import { describe, expect, it } from "vitest";
import { JobFileError } from "../../src/common/model/jobfile-error.ts";
import type { JobState } from "../../src/common/model/states.ts";
import {
  findCycle,
  isWorkflowFile,
  isWorkflowId,
  topologicalOrder,
  validateWorkflowFile,
  withJobIds,
  workflowState,
} from "../../src/common/model/workflow.ts";

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

  it.each<[string, (JobState | undefined)[], JobState]>([
    ["all succeeded", ["succeeded", "succeeded"], "succeeded"],
    ["one running", ["succeeded", "running", "waiting"], "running"],
    ["one pending", ["succeeded", "pending", "waiting"], "pending"],
    ["one held", ["held", "waiting"], "held"],
    ["waiting only", ["succeeded", "waiting"], "waiting"],
    ["a failure, all ended", ["succeeded", "failed", "cancelled"], "failed"],
    ["cancelled, all ended", ["succeeded", "cancelled"], "cancelled"],
    ["a job removed", ["succeeded", undefined], "cancelled"],
  ])("workflowState: %s", (_, states, state) => {
    expect(workflowState(states)).toBe(state);
  });

  it.each<[unknown, boolean]>([
    [{ jobs: {} }, true],
    [{ command: "x" }, false],
    [null, false],
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
