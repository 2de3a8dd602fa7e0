// dependsOn's kinds as rules: what a dependency in each state says for each `when` (a table), how
// verdicts combine, the words explain and the history use, and the job file's forms of an entry.

import { describe, expect, it } from "vitest";
import {
  combinedVerdict,
  type DependencyCondition,
  type DependencyVerdict,
  dependencyOf,
  dependencyVerdict,
  describeDependency,
  sameTasksProblem,
} from "../../../../src/common/model/dependencies.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";
import type { TaskState } from "../../../../src/common/model/states.ts";

describe("dependencyVerdict", () => {
  const cases: [DependencyCondition, TaskState | undefined, DependencyVerdict][] = [
    ["succeeded", "succeeded", "met"],
    ["succeeded", "failed", "never"],
    ["succeeded", "cancelled", "never"],
    ["ended", "succeeded", "met"],
    ["ended", "failed", "met"],
    ["ended", "cancelled", "met"],
    ["failed", "failed", "met"],
    ["failed", "succeeded", "never"],
    ["failed", "cancelled", "never"],
    ["succeeded", undefined, "never"],
    ["failed", undefined, "never"],
    ["ended", undefined, "met"],
  ];
  for (const when of ["succeeded", "ended", "failed"] as const)
    for (const state of ["held", "waiting", "pending", "running"] as const) cases.push([when, state, "wait"]);

  it.each(cases)("when %s, a dependency %s says %s", (when, state, verdict) => {
    expect(dependencyVerdict(when, state)).toBe(verdict);
  });
});

describe("combinedVerdict", () => {
  it.each<[DependencyVerdict[], DependencyVerdict]>([
    [[], "met"],
    [["met", "met"], "met"],
    [["met", "wait"], "wait"],
    [["wait", "never"], "never"],
    [["never", "met"], "never"],
  ])("%j is %s", (verdicts, combined) => {
    expect(combinedVerdict(verdicts)).toBe(combined);
  });
});

describe("an entry of dependsOn", () => {
  it("is a job id (to succeed) or {job, when, tasks}", () => {
    expect(dependencyOf("12")).toEqual({ job: "12", when: "succeeded", sameTasks: false });
    expect(dependencyOf({ job: "12", when: "ended" })).toEqual({
      job: "12",
      when: "ended",
      sameTasks: false,
    });
    expect(dependencyOf({ job: "12", tasks: "same" })).toEqual({
      job: "12",
      when: "succeeded",
      sameTasks: true,
    });
  });

  it("is said in words", () => {
    expect(describeDependency(dependencyOf({ job: "12", when: "ended" }))).toBe("job 12 to end");
    expect(describeDependency(dependencyOf({ job: "12", when: "failed" }), 3)).toBe(
      "task 3 of job 12 to fail",
    );
  });

  it("is read from a job file in either form; a wrong one is refused naming its field", () => {
    const spec = validateJobSpec({
      command: "x",
      dependsOn: ["1", { job: "2", when: "failed" }, { job: "3", when: "ended", tasks: "same" }],
    });
    expect(spec.dependsOn).toEqual([
      "1",
      { job: "2", when: "failed" },
      { job: "3", when: "ended", tasks: "same" },
    ]);
    for (const [dependsOn, field] of [
      [[{ job: "2", when: "later" }], "dependsOn[0]"],
      [[{ job: "2", tasks: "all" }], "dependsOn[0]"],
      [[{ when: "ended" }], "dependsOn[0]"],
      [[{ job: "2", other: 1 }], "dependsOn[0]"],
    ] as const) {
      try {
        validateJobSpec({ command: "x", dependsOn });
        expect.unreachable(`${JSON.stringify(dependsOn)} was taken`);
      } catch (error) {
        expect(error).toBeInstanceOf(JobFileError);
        expect((error as JobFileError).message).toContain(field);
      }
    }
  });
});

describe("sameTasksProblem", () => {
  it("asks for as many tasks on both sides, naming both counts", () => {
    expect(sameTasksProblem("12", 10, 10)).toBeNull();
    expect(sameTasksProblem("12", 10, 4)).toBe(
      "tasks: same needs as many tasks as job 12: this job has 10, job 12 has 4",
    );
  });
});
