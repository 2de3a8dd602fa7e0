// An update's parts one by one (the handler's tests, test/unit/broker/reactor/handlers/
// job-update.test.ts, take it whole): the fields an update names, its shape's refusals, the job
// file it makes (an array's throttle set, changed or removed; resources merged), and what it
// changed, field by field.

import { describe, expect, it } from "vitest";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import {
  ARRAY_FIELDS,
  FIELDS_FIXED_ONCE_RUN,
  type JobUpdate,
  parseJobUpdate,
  type UpdateFacts,
  updateChanges,
  updatedFields,
  updatedSpec,
  updateRefusal,
} from "../../../../src/common/model/job-update.ts";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";
import type { UpdateChange, UpdateField } from "../../../../src/common/model/update-fields.ts";

describe("updatedFields", () => {
  it.each<[string, JobUpdate, UpdateField[]]>([
    ["none", {}, []],
    ["the priority", { priority: 0 }, ["priority"]],
    ["the tier", { qos: "high" }, ["qos"]],
    ["requirements removed", { requirements: null }, ["requirements"]],
    ["a rank", { rank: "host.speed" }, ["rank"]],
    ["cpus", { resources: { cpus: 2 } }, ["resources.cpus"]],
    ["memory", { resources: { memoryMb: 0 } }, ["resources.memoryMb"]],
    ["resources naming neither", { resources: {} }, []],
    ["a time limit removed", { timeLimitSeconds: null }, ["timeLimitSeconds"]],
    ["a throttle removed", { array: { parallel: null } }, ["array.parallel"]],
    ["an array naming no throttle", { array: {} }, []],
    [
      "all, in the order of UPDATE_FIELDS",
      {
        array: { parallel: 2 },
        timeLimitSeconds: 60,
        resources: { memoryMb: 100, cpus: 1 },
        rank: "1.0",
        requirements: "true",
        qos: "low",
        priority: 1,
      },
      [
        "priority",
        "qos",
        "requirements",
        "rank",
        "resources.cpus",
        "resources.memoryMb",
        "timeLimitSeconds",
        "array.parallel",
      ],
    ],
  ])("%s", (_, update, fields) => {
    expect(updatedFields(update)).toEqual(fields);
  });
});

describe("parseJobUpdate", () => {
  const fieldList =
    "priority, qos, requirements, rank, resources.cpus, resources.memoryMb, timeLimitSeconds and array.parallel";
  it.each<[string, unknown, string, string]>([
    ["null", null, "", `an update is a mapping of the fields to change (${fieldList})`],
    ["a number", 5, "", `an update is a mapping of the fields to change (${fieldList})`],
    ["a text", "priority", "", `an update is a mapping of the fields to change (${fieldList})`],
    ["a list", [], "", `an update is a mapping of the fields to change (${fieldList})`],
    ["an empty mapping", {}, "", `nothing to change: give at least one of ${fieldList}`],
    ["empty resources", { resources: {} }, "", `nothing to change: give at least one of ${fieldList}`],
    ["an unknown field", { name: "x" }, "name", `an update may change only ${fieldList}`],
    ["a wrong type", { rank: 1 }, "rank", "Invalid input: expected string, received number"],
  ])("refuses %s", (_, input, field, problem) => {
    let refusal: unknown;
    try {
      parseJobUpdate(input);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(JobFileError);
    expect({ path: (refusal as JobFileError).path, problem: (refusal as JobFileError).problem }).toEqual({
      path: field === "" ? [] : [field],
      problem,
    });
  });

  it.each<[string, JobUpdate]>([
    ["cpus alone", { resources: { cpus: 2 } }],
    ["memory alone", { resources: { memoryMb: 64 } }],
    ["a throttle alone", { array: { parallel: 3 } }],
    ["a time limit alone", { timeLimitSeconds: 30 }],
    ["a rank alone", { rank: "host.speed" }],
  ])("takes %s", (_, update) => {
    expect(parseJobUpdate(update)).toEqual(update);
  });
});

describe("updatedSpec", () => {
  it.each<[string, Record<string, unknown>, JobUpdate, Record<string, unknown>]>([
    [
      "a throttle changed",
      { array: { count: 4, parallel: 2 } },
      { array: { parallel: 3 } },
      { array: { count: 4, parallel: 3 } },
    ],
    [
      "a throttle given",
      { array: { count: 4 } },
      { array: { parallel: 1 } },
      { array: { count: 4, parallel: 1 } },
    ],
    [
      "a throttle removed",
      { array: { count: 4, parallel: 2 } },
      { array: { parallel: null } },
      { array: { count: 4 } },
    ],
    [
      "an array left as it is",
      { array: { count: 4, parallel: 2 } },
      { array: {} },
      { array: { count: 4, parallel: 2 } },
    ],
    ["a throttle for a single job: none", {}, { array: { parallel: 2 } }, {}],
    [
      "cpus, memory kept",
      { resources: { cpus: 2, memoryMb: 64 } },
      { resources: { cpus: 4 } },
      { resources: { cpus: 4, memoryMb: 64 } },
    ],
    [
      "memory, cpus kept",
      { resources: { cpus: 2, memoryMb: 64 } },
      { resources: { memoryMb: 128 } },
      { resources: { cpus: 2, memoryMb: 128 } },
    ],
    ["a new tier", {}, { qos: "high" }, { qos: "high" }],
    ["a rank removed", { rank: "host.speed" }, { rank: null }, {}],
    [
      "a resource given as undefined left as it is",
      { resources: { cpus: 2, memoryMb: 64 } },
      { resources: { cpus: 3, memoryMb: undefined } },
      { resources: { cpus: 3, memoryMb: 64 } },
    ],
    ["a time limit given", {}, { timeLimitSeconds: 90 }, { timeLimitSeconds: 90 }],
  ])("%s", (_, before, update, after) => {
    const spec = validateJobSpec({ command: "run", ...before });
    expect(updatedSpec(spec, update)).toEqual(validateJobSpec({ command: "run", ...after }));
  });

  it("leaves the job file it was given as it was", () => {
    const spec = validateJobSpec({
      command: "run",
      priority: 1,
      resources: { cpus: 2 },
      array: { count: 2, parallel: 1 },
    });
    const copy = structuredClone(spec);
    updatedSpec(spec, { priority: 5, resources: { cpus: 3 }, array: { parallel: null } });
    expect(spec).toEqual(copy);
  });
});

describe("the fields kept apart", () => {
  it("names the throttle as an array's, and the cpus as fixed once a task has run", () => {
    expect(ARRAY_FIELDS).toEqual(["array.parallel"]);
    expect(FIELDS_FIXED_ONCE_RUN).toEqual(["resources.cpus"]);
  });
});

describe("updateRefusal", () => {
  const job = (facts: Partial<UpdateFacts>): UpdateFacts => ({
    id: "7",
    state: "pending",
    cancelRequested: false,
    tasks: 1,
    liveTasks: 0,
    startedTasks: 0,
    ...facts,
  });
  it.each<[string, Partial<UpdateFacts>, UpdateField[], string | null]>([
    [
      "a failed job",
      { state: "failed", startedTasks: 1 },
      ["priority"],
      "job 7 is failed: an ended job cannot be updated (submit it again)",
    ],
    ["a single job that ran, new memory", { startedTasks: 1 }, ["resources.memoryMb"], null],
    [
      "a single job that ran, new cpus",
      { startedTasks: 1 },
      ["resources.cpus", "priority"],
      "job 7 has tasks that have run: resources.cpus cannot change (their cpu time is counted at the job's cpus); submit it again instead",
    ],
    ["a job not started, new cpus", {}, ["resources.cpus"], null],
    ["an array not started, a throttle", { tasks: 2 }, ["array.parallel"], null],
    [
      "an array running, two fields it holds",
      { state: "running", tasks: 3, liveTasks: 1, startedTasks: 1 },
      ["array.parallel", "qos", "resources.cpus"],
      "job 7 is running (1 of 3 tasks): only priority and array.parallel may change while its tasks run, not qos, resources.cpus, which its running tasks were placed with (hold it first, or update it once they end)",
    ],
    [
      "a single job and its throttle, running",
      { state: "running", liveTasks: 1, startedTasks: 1 },
      ["priority", "array.parallel"],
      "job 7 is not an array: array.parallel applies to arrays only",
    ],
  ])("%s", (_, facts, fields, refusal) => {
    expect(updateRefusal(job(facts), fields)).toBe(refusal);
  });
});

describe("updateChanges", () => {
  it.each<[string, Record<string, unknown>, string | null, JobUpdate, string | null, UpdateChange[]]>([
    ["none", {}, null, { priority: 0 }, null, []],
    ["the priority", { priority: 1 }, null, { priority: 4 }, null, [{ field: "priority", from: 1, to: 4 }]],
    ["the tier", {}, null, { qos: "high" }, null, [{ field: "qos", from: "normal", to: "high" }]],
    [
      "requirements given",
      {},
      null,
      { requirements: "host.speed > 1.0" },
      "host.speed > 1.0",
      [{ field: "requirements", from: null, to: "host.speed > 1.0" }],
    ],
    [
      "requirements the job wrote, removed",
      {},
      "host.speed > 2.0",
      { requirements: null },
      null,
      [{ field: "requirements", from: "host.speed > 2.0", to: null }],
    ],
    [
      "a rank given",
      {},
      null,
      { rank: "host.speed" },
      null,
      [{ field: "rank", from: null, to: "host.speed" }],
    ],
    [
      "a rank removed",
      { rank: "host.speed" },
      null,
      { rank: null },
      null,
      [{ field: "rank", from: "host.speed", to: null }],
    ],
    ["cpus", {}, null, { resources: { cpus: 3 } }, null, [{ field: "resources.cpus", from: 1, to: 3 }]],
    [
      "memory",
      {},
      null,
      { resources: { memoryMb: 64 } },
      null,
      [{ field: "resources.memoryMb", from: 0, to: 64 }],
    ],
    ["the same memory", { resources: { memoryMb: 64 } }, null, { resources: { memoryMb: 64 } }, null, []],
    [
      "a time limit",
      {},
      null,
      { timeLimitSeconds: 60 },
      null,
      [{ field: "timeLimitSeconds", from: null, to: 60 }],
    ],
    [
      "a time limit removed",
      { timeLimitSeconds: 60 },
      null,
      { timeLimitSeconds: null },
      null,
      [{ field: "timeLimitSeconds", from: 60, to: null }],
    ],
    [
      "a throttle",
      { array: { count: 3 } },
      null,
      { array: { parallel: 2 } },
      null,
      [{ field: "array.parallel", from: null, to: 2 }],
    ],
    [
      "a throttle removed",
      { array: { count: 3, parallel: 2 } },
      null,
      { array: { parallel: null } },
      null,
      [{ field: "array.parallel", from: 2, to: null }],
    ],
  ])("%s", (_, before, requirements, update, afterRequirements, changes) => {
    const spec = validateJobSpec({ command: "run", ...before });
    const after = updatedSpec(spec, update);
    expect(after.requirements ?? null).toBe(afterRequirements);
    expect(
      updateChanges({ spec, priority: spec.priority, requirements }, after, updatedFields(update)),
    ).toEqual(changes);
  });

  it("finds no throttle of a single job to change", () => {
    const spec = validateJobSpec({ command: "run" });
    expect(updateChanges({ spec, priority: 0, requirements: null }, spec, ["array.parallel"])).toEqual([]);
  });

  it("reads the priority and requirements given, not the job file's", () => {
    const spec = validateJobSpec({ command: "run", priority: 1, requirements: "true" });
    const after = validateJobSpec({ command: "run", priority: 1, requirements: "true" });
    expect(
      updateChanges({ spec, priority: 3, requirements: "false" }, after, ["priority", "requirements"]),
    ).toEqual([
      { field: "priority", from: 3, to: 1 },
      { field: "requirements", from: "false", to: "true" },
    ]);
  });
});
