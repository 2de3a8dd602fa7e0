// The messages of a job file's (and a workflow file's) errors as users read them, from the API's
// 400, the CLI and the dashboard alike: the place of the field's key, the field's path, `required`
// for a field left out, the known key an unknown one was most likely meant to be, and a syntax
// error as one clean clause.

import { describe, expect, it } from "vitest";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { JobFileError, parseFieldPath } from "../../../../src/common/model/jobfile-error.ts";
import { placeJobFileError, placeOfField } from "../../../../src/common/model/jobfile-place.ts";
import { parseJobFileText } from "../../../../src/common/model/jobfile-text.ts";
import { editDistance, nearestKey } from "../../../../src/common/model/key-suggestion.ts";
import { isWorkflowFile, validateWorkflowFile } from "../../../../src/common/model/workflow.ts";

/** The message a file's text is refused with, as the server words it (null: accepted). */
function messageOf(text: string): string | null {
  try {
    const data = parseJobFileText(text);
    if (isWorkflowFile(data)) validateWorkflowFile(data);
    else validateJobSpec(data);
    return null;
  } catch (error) {
    if (!(error instanceof JobFileError)) throw error;
    return placeJobFileError(error, text).message;
  }
}

describe("a job file's error message", () => {
  it.each<[string, string, string]>([
    [
      "a YAML syntax error, with no dangling colon",
      "name: x\ncommand: [a,\nb: c\n",
      "line 3, column 1: not valid YAML or JSON: flow sequence in block collection must be sufficiently indented and end with a ]",
    ],
    [
      "a tab as indentation",
      "command: x\nresources:\n\tcpus: 2\n",
      "line 3, column 1: not valid YAML or JSON: tabs are not allowed as indentation",
    ],
    [
      "a misspelt key",
      "name: x\ncomand: hostname\n",
      "line 2, column 1: comand: unknown key (did you mean command?)",
    ],
    [
      "two letters swapped",
      "command: x\nnmae: y\n",
      "line 2, column 1: nmae: unknown key (did you mean name?)",
    ],
    [
      "a known alias",
      "command: x\ntimeLimit: 60\n",
      "line 2, column 1: timeLimit: unknown key (did you mean timeLimitSeconds?)",
    ],
    [
      "snake case",
      "command: x\ntime_limit_seconds: 60\n",
      "line 2, column 1: time_limit_seconds: unknown key (did you mean timeLimitSeconds?)",
    ],
    [
      "a key of another mapping",
      "command: x\nmemory: 512\n",
      "line 2, column 1: memory: unknown key (did you mean resources.memoryMb?)",
    ],
    [
      "a nested misspelt key",
      "command: x\nresources:\n  cpu: 2\n",
      "line 3, column 3: resources.cpu: unknown key (did you mean cpus?)",
    ],
    [
      "the beginning of a known key",
      "command: x\nretry:\n  maxAttempts: 3\n  backoff: 10\n",
      "line 4, column 3: retry.backoff: unknown key (did you mean backoffSeconds?)",
    ],
    ["an unknown key like none", "command: x\nbogus: 1\n", "line 2, column 1: bogus: unknown key"],
    ["a required key left out", "name: x\n", "line 1, column 1: command: required"],
    [
      "a required nested key left out",
      "command: x\ncontract:\n  graceSeconds: 5\n",
      "line 2, column 1: contract.minProgressPerMinute: required",
    ],
    [
      "a required key of a list's item left out",
      "command: x\ndependsOn:\n  - '1'\n  - when: ended\n",
      "line 4, column 5: dependsOn[1].job: required",
    ],
    [
      "a wrong value, at its key",
      "command: x\ntimeLimitSeconds: -1\n",
      "line 2, column 1: timeLimitSeconds: Too small: expected number to be >0",
    ],
    [
      "a wrong item of a list, at the item",
      "command: x\ninputs:\n  - a\n  - ../b\n",
      'line 4, column 5: inputs[1]: "../b" leaves its folder',
    ],
    [
      "JSON, at its lines",
      '{\n  "command": "x",\n  "colour": "red"\n}\n',
      "line 3, column 3: colour: unknown key",
    ],
    ["a list", "- a\n- b\n", "line 1, column 1: a job file must be a mapping of fields"],
  ])("%s", (_, text, message) => {
    expect(messageOf(text)).toBe(message);
  });
});

describe("a workflow file's error message", () => {
  it.each<[string, string, string]>([
    [
      "a misspelt top key",
      "jobs:\n  a: {command: x}\nnmae: w\n",
      "line 3, column 1: nmae: unknown key (did you mean name?)",
    ],
    [
      "a job's misspelt key, under a name with dots",
      "jobs:\n  prep.v2:\n    comand: x\n",
      "line 3, column 5: jobs.prep.v2.comand: unknown key (did you mean command?)",
    ],
    [
      "a job's required key left out",
      "jobs:\n  a:\n    name: first\n",
      "line 2, column 3: jobs.a.command: required",
    ],
    [
      "an unknown dependency",
      "jobs:\n  a:\n    command: x\n    dependsOn: [b]\n",
      "line 4, column 17: jobs.a.dependsOn[0]: no job named b in the workflow",
    ],
    [
      "a cycle, at the edge it starts with",
      "jobs:\n  a:\n    command: x\n    dependsOn: [b]\n  b:\n    command: y\n    dependsOn:\n      - a\n",
      "line 4, column 17: jobs.a.dependsOn[0]: cycle: a -> b -> a",
    ],
  ])("%s", (_, text, message) => {
    expect(messageOf(text)).toBe(message);
  });
});

describe("nearestKey", () => {
  const known = ["name", "command", "inputs", "timeLimitSeconds", "dependsOn"];
  it.each<[string, Record<string, string>, string | null]>([
    ["comand", {}, "command"],
    ["Command", {}, "command"],
    ["depends_on", {}, "dependsOn"],
    ["timeLimit", {}, "timeLimitSeconds"],
    ["walltime", { walltime: "timeLimitSeconds" }, "timeLimitSeconds"],
    ["wall_time", { walltime: "timeLimitSeconds" }, "timeLimitSeconds"],
    ["nam", {}, "name"],
    ["xyz", {}, null],
    ["colour", {}, null],
    ["tim", {}, null],
  ])("%s -> %s", (typed, aliases, meant) => {
    expect(nearestKey(typed, known, aliases)).toBe(meant);
  });

  it.each<[string, string, number]>([
    ["comand", "command", 1],
    ["nmae", "name", 1],
    ["", "abc", 3],
    ["kitten", "sitting", 3],
  ])("editDistance(%s, %s) = %i", (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
  });
});

describe("field paths and their places", () => {
  it.each<[string, (string | number)[]]>([
    ["", []],
    ["inputs[1]", ["inputs", 1]],
    ["array.params[2].x", ["array", "params", 2, "x"]],
    ["jobs.a.dependsOn[0].tasks", ["jobs", "a", "dependsOn", 0, "tasks"]],
  ])("%s is %j", (field, path) => {
    expect(parseFieldPath(field)).toEqual(path);
  });

  it("a place is null for text that is not YAML", () => {
    expect(placeOfField("a: [", ["a"])).toBeNull();
  });
});
