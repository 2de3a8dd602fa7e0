// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${param}` is the job file's placeholder, written as users write it
import { describe, expect, it } from "vitest";
import {
  arrayParallel,
  type JobSpec,
  nodesOf,
  resolveParamsFile,
  resolveParamsLines,
  taskCount,
  taskParam,
  validateJobSpec,
} from "../../../../src/common/model/job-spec.ts";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";
import { parseJobFileText } from "../../../../src/common/model/jobfile-text.ts";
import { relativePathProblem } from "../../../../src/common/model/relative-path.ts";

/** Runs validateJobSpec and returns the JobFileError it throws (fails the test when it does not throw). */
function rejection(input: unknown): JobFileError {
  try {
    validateJobSpec(input);
  } catch (error) {
    expect(error).toBeInstanceOf(JobFileError);
    return error as JobFileError;
  }
  throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
}

describe("validateJobSpec defaults", () => {
  it("fills every default for a job file with only a command", () => {
    expect(validateJobSpec({ command: "echo hi" })).toEqual({
      command: "echo hi",
      inputs: [],
      outputs: [],
      env: {},
      resources: { cpus: 1, memoryMb: 0 },
      priority: 0,
      qos: "normal",
      retry: { maxAttempts: 1, backoffSeconds: 5 },
      checkpoint: { intervalSeconds: 60, graceSeconds: 30 },
      replicas: 1,
      dependsOn: [],
    });
  });

  it("leaves optional fields without a default absent", () => {
    const spec = validateJobSpec({ command: "true" });
    for (const key of ["name", "requirements", "rank", "timeLimitSeconds", "array", "contract"]) {
      expect(spec).not.toHaveProperty(key);
    }
  });

  it.each([
    ["resources", { resources: { cpus: 4 } }, { cpus: 4, memoryMb: 0 }],
    ["resources", { resources: { memoryMb: 512 } }, { cpus: 1, memoryMb: 512 }],
    ["retry", { retry: { maxAttempts: 3 } }, { maxAttempts: 3, backoffSeconds: 5 }],
    ["retry", { retry: { backoffSeconds: 0 } }, { maxAttempts: 1, backoffSeconds: 0 }],
    ["checkpoint", { checkpoint: { intervalSeconds: 10 } }, { intervalSeconds: 10, graceSeconds: 30 }],
    ["checkpoint", { checkpoint: { graceSeconds: 0 } }, { intervalSeconds: 60, graceSeconds: 0 }],
  ] as const)("fills the rest of a partly given %s", (key, partial, expected) => {
    const spec = validateJobSpec({ command: "true", ...partial });
    expect(spec[key]).toEqual(expected);
  });

  it.each([
    ["a string", "./run.sh --fast"],
    ["an array", ["./ns3d", "input"]],
  ])("accepts the command as %s", (_, command) => {
    expect(validateJobSpec({ command }).command).toEqual(command);
  });

  it("keeps every field of the full example", () => {
    const spec = validateJobSpec({
      name: "cfd",
      command: ["./ns3d", "input"],
      inputs: ["ns3d", "input", "grid"],
      outputs: ["residual", "profile"],
      env: { OMP_NUM_THREADS: "1" },
      resources: { cpus: 1, memoryMb: 512 },
      requirements: 'host.arch == "x86_64" && host.memFreeMb >= 512',
      rank: "host.speed * host.cpuFree",
      priority: 0,
      timeLimitSeconds: 3600,
      retry: { maxAttempts: 1, backoffSeconds: 5 },
      checkpoint: { intervalSeconds: 60, graceSeconds: 30 },
      array: { count: 100 },
      replicas: 1,
      dependsOn: [],
      contract: { minProgressPerMinute: 0.05, graceSeconds: 60 },
    });
    expect(spec.name).toBe("cfd");
    expect(spec.contract).toEqual({ minProgressPerMinute: 0.05, graceSeconds: 60 });
    expect(spec.inputs).toEqual(["ns3d", "input", "grid"]);
    expect(spec.env).toEqual({ OMP_NUM_THREADS: "1" });
    expect(spec.array).toEqual({ count: 100 });
    expect(spec.timeLimitSeconds).toBe(3600);
    expect(taskCount(spec)).toBe(100);
  });

  it("counts one task for a job without array", () => {
    expect(taskCount(validateJobSpec({ command: "true" }))).toBe(1);
  });

  it("accepts a multi-node job, and nodes: 1 beside array or replicas", () => {
    expect(
      validateJobSpec({ command: "x", nodes: 4, restartPool: "spares", outputsFrom: "all" }),
    ).toMatchObject({
      nodes: 4,
      restartPool: "spares",
      outputsFrom: "all",
    });
    expect(validateJobSpec({ command: "x", nodes: 1, array: { count: 3 }, replicas: 2 }).nodes).toBe(1);
    expect(() => validateJobSpec({ command: "x", nodes: 2, array: { count: 3 } })).toThrow(
      "nodes: a multi-node job is one gang: it may not be combined with array",
    );
  });

  it.each([1, 2, 8])("accepts replicas: %i (at most 8)", (replicas) => {
    expect(validateJobSpec({ command: "true", replicas }).replicas).toBe(replicas);
  });
});

describe("validateJobSpec rejects unknown keys", () => {
  it.each([
    [{ command: "x", bogus: 1 }, "bogus", ""],
    [{ command: "x", memoryMb: 5 }, "memoryMb", " (did you mean resources.memoryMb?)"],
    [{ command: "x", resources: { gpu: 1 } }, "resources.gpu", " (did you mean gpus?)"],
    [{ command: "x", resources: { cpus: 2, gpu: 1 } }, "resources.gpu", " (did you mean gpus?)"],
    [{ command: "x", retry: { foo: 1 } }, "retry.foo", ""],
    [{ command: "x", checkpoint: { every: 5 } }, "checkpoint.every", ""],
    [{ command: "x", array: { count: 3, size: 3 } }, "array.size", ""],
    [
      { command: "x", contract: { minProgressPerMinute: 1, graceSeconds: 5, window: 3 } },
      "contract.window",
      "",
    ],
  ])("%j -> %s", (input, field, suggestion) => {
    const error = rejection(input);
    expect(error.field).toBe(field);
    expect(error.message).toBe(`${field}: unknown key${suggestion}`);
  });

  it("names the unknown key array.size even when array.count is missing", () => {
    expect(rejection({ command: "x", array: { size: 3 } }).field).toBe("array.size");
  });

  it("still rejects array without count", () => {
    expect(rejection({ command: "x", array: { size: 3 } }).field).toMatch(/^array\./);
  });
});

describe("validateJobSpec rejects wrong types and values with the field path", () => {
  it.each([
    [{}, "command"],
    [{ command: 3 }, "command"],
    [{ command: "" }, "command"],
    [{ command: [] }, "command"],
    [{ command: "x", priority: "high" }, "priority"],
    [{ command: "x", priority: 1.5 }, "priority"],
    [{ command: "x", resources: { cpus: 1.5 } }, "resources.cpus"],
    [{ command: "x", resources: { cpus: 0 } }, "resources.cpus"],
    [{ command: "x", resources: { memoryMb: -1 } }, "resources.memoryMb"],
    [{ command: "x", resources: "big" }, "resources"],
    [{ command: "x", env: { X: 3 } }, "env.X"],
    [{ command: "x", env: { "1X": "a" } }, "env.1X"],
    [{ command: "x", env: ["A=1"] }, "env"],
    [{ command: "x", retry: { maxAttempts: 0 } }, "retry.maxAttempts"],
    [{ command: "x", retry: { backoffSeconds: -1 } }, "retry.backoffSeconds"],
    [{ command: "x", checkpoint: { intervalSeconds: 0 } }, "checkpoint.intervalSeconds"],
    [{ command: "x", timeLimitSeconds: 0 }, "timeLimitSeconds"],
    [{ command: "x", array: { count: 0 } }, "array.count"],
    [{ command: "x", replicas: 0 }, "replicas"],
    [{ command: "x", replicas: 65 }, "replicas"],
    [{ command: "x", replicas: 9 }, "replicas"],
    [{ command: "x", dependsOn: "job-1" }, "dependsOn"],
    [{ command: "x", dependsOn: ["a", ""] }, "dependsOn[1]"],
    [{ command: "x", name: "" }, "name"],
    [{ command: "x", requirements: 3 }, "requirements"],
    [{ command: "x", contract: "fast" }, "contract"],
    [
      { command: "x", contract: { minProgressPerMinute: 0, graceSeconds: 5 } },
      "contract.minProgressPerMinute",
    ],
    [
      { command: "x", contract: { minProgressPerMinute: -1, graceSeconds: 5 } },
      "contract.minProgressPerMinute",
    ],
    [{ command: "x", contract: { minProgressPerMinute: 0.1, graceSeconds: -1 } }, "contract.graceSeconds"],
    [{ command: "x", contract: { minProgressPerMinute: 0.1 } }, "contract.graceSeconds"],
    [{ command: "x", nodes: 0 }, "nodes"],
    [{ command: "x", nodes: 1.5 }, "nodes"],
    [{ command: "x", nodes: 2, array: { count: 4 } }, "nodes"],
    [{ command: "x", nodes: 2, replicas: 2 }, "nodes"],
    [{ command: "x", outputsFrom: "rank1" }, "outputsFrom"],
    [{ command: "x", restartPool: "" }, "restartPool"],
    [{ command: "x", maxQueueWaitSeconds: 0 }, "maxQueueWaitSeconds"],
  ])("%j -> %s", (input, field) => {
    const error = rejection(input);
    expect(error.field).toBe(field);
    expect(error.message.startsWith(`${field}: `)).toBe(true);
    expect(error.name).toBe("JobFileError");
  });

  it.each([[[]], ["command: x"], [null], [42], [undefined], [["command", "x"]]])(
    "rejects a document that is not a mapping: %j",
    (input) => {
      const error = rejection(input);
      expect(error.field).toBe("");
      expect(error.message).toBe("a job file must be a mapping of fields");
    },
  );
});

describe("validateJobSpec's first problem, as its exact message", () => {
  it.each<[string, unknown, string]>([
    ["a NUL byte in a string command", { command: "a\0b" }, "command: must not contain a NUL byte"],
    [
      "a NUL byte in a word of a list command",
      { command: ["a", "b\0"] },
      "command[1]: must not contain a NUL byte",
    ],
    [
      "a NUL byte in a variable's value",
      { command: "x", env: { A: "b\0" } },
      "env.A: must not contain a NUL byte",
    ],
    [
      "a union's value of no form: the forms it may have",
      { command: "x", dependsOn: [3] },
      "dependsOn[0]: expected string or object",
    ],
    ["array as neither form", { command: "x", array: "x" }, "array: expected number or object"],
    [
      "a parameter of no form",
      { command: "x", array: { params: [1] } },
      "array.params[0]: expected string or record",
    ],
    [
      "three forms listed with commas and `or`",
      { command: "x", array: { params: [{ a: null }] } },
      "array.params[0].a: expected string, number or boolean",
    ],
    [
      "a union's branch that goes deeper: its problem",
      { command: "x", array: { count: "x" } },
      "array.count: Invalid input: expected number, received string",
    ],
    [
      "a union's branch that fails on the value itself, not of a type",
      { command: "x", array: 0 },
      "array: Too small: expected number to be >=1",
    ],
    [
      "a dependency's mapping that goes deeper than the string form",
      { command: "x", dependsOn: [{ job: "1", when: "x" }] },
      'dependsOn[0].when: Invalid option: expected one of "succeeded"|"ended"|"failed"',
    ],
    [
      "a required key of a dependency's mapping",
      { command: "x", dependsOn: [{}] },
      "dependsOn[0].job: required",
    ],
    [
      "a required key of an empty mapping",
      { command: "x", contract: {} },
      "contract.minProgressPerMinute: required",
    ],
    [
      "a key given as null is not left out",
      { command: "x", resources: null },
      "resources: Invalid input: expected object, received null",
    ],
    [
      "the first problem in the file's order",
      { command: 5, name: 3 },
      "name: Invalid input: expected string, received number",
    ],
    ["the whole command left out", { name: "x" }, "command: required"],
    [
      "a record's bad key",
      { command: "x", resources: { custom: { "1a": 1 } } },
      "resources.custom.1a: Invalid key in record",
    ],
    [
      "CEL that does not compile: `CEL:` first",
      { command: "x", requirements: "1 +" },
      "requirements: CEL: Unexpected token: EOF",
    ],
    [
      "CEL of the wrong type: `CEL:` first",
      { command: "x", rank: "host.name" },
      "rank: CEL: must be a number, but it is string",
    ],
    [
      "an unknown key beside a missing required one",
      { resources: { cpus: 2, bogus: 1 } },
      "resources.bogus: unknown key",
    ],
    [
      "an unknown key whose mapping's alias is known",
      { command: "x", checkpoint: { interval: 5 } },
      "checkpoint.interval: unknown key (did you mean intervalSeconds?)",
    ],
    [
      "params and paramsFile together",
      { command: "x", inputs: ["p"], array: { params: ["a"], paramsFile: "p" } },
      "array.paramsFile: give params or paramsFile, not both",
    ],
    [
      "a count that does not match the parameters",
      { command: "x", array: { params: ["a", "b"], count: 3 } },
      "array.count: count 3 does not match the 2 parameters of array.params: leave count out, or make them agree",
    ],
    [
      "a parameters file that is not an input",
      { command: "x", inputs: ["q"], array: { paramsFile: "p" } },
      "array.paramsFile: p is not one of the job's inputs: list it in inputs (they are uploaded at submit)",
    ],
    ["an array of no tasks", { command: "x", array: {} }, "array: give count, params or paramsFile"],
    [
      "a parameter without the key the command names",
      { command: "x ${param.a}", array: { params: [{ a: 1 }, { b: 2 }] } },
      "array.params[1]: has no key a, which the command or env names (${param.a})",
    ],
    [
      "a string parameter where the command names a key",
      { command: "x ${param.a}", array: { params: ["s"] } },
      "array.params[0]: a string, but the command or env names ${param.a}: a mapping with key a is needed",
    ],
    [
      "an unknown modifier in a list command's word",
      { command: ["x", "${param:zz}"], array: { params: ["a"] } },
      "command[1]: ${param:zz}: no modifier :zz (${param:q} is the parameter as one shell word)",
    ],
    [
      "an unknown modifier in a string command",
      { command: "x ${param:zz}", array: { params: ["a"] } },
      "command: ${param:zz}: no modifier :zz (${param:q} is the parameter as one shell word)",
    ],
    [
      "an unknown modifier in a variable",
      { command: "x", env: { A: "ok", B: "${param:zz}" }, array: { params: ["a"] } },
      "env.B: ${param:zz}: no modifier :zz (${param:q} is the parameter as one shell word)",
    ],
    [
      "an unknown modifier with a parameters file",
      { command: "x ${param:zz}", inputs: ["p"], array: { paramsFile: "p" } },
      "command: ${param:zz}: no modifier :zz (${param:q} is the parameter as one shell word)",
    ],
    [
      "a path that leaves its folder, quoted",
      { command: "x", inputs: ["a", "../x"] },
      'inputs[1]: "../x" leaves its folder',
    ],
    [
      "a wrong type of a nested key given is not left out",
      { command: "x", resources: { cpus: "two" } },
      "resources.cpus: Invalid input: expected number, received string",
    ],
    [
      "an item of a list left undefined is not a key left out",
      { command: "x", dependsOn: ["a", undefined] },
      "dependsOn[1]: expected string or object",
    ],
    [
      "a parameter's bad key, named in the field",
      { command: "x", array: { params: [{ ok: 1 }, { "a b": 1 }] } },
      "array.params[1].a b: not a parameter key (1 to 64 letters, digits, _ or -)",
    ],
    [
      "nodes with replicas",
      { command: "x", nodes: 2, replicas: 2 },
      "nodes: a multi-node job may not be combined with replicas",
    ],
  ])("%s", (_, input, message) => {
    expect(rejection(input).message).toBe(message);
  });

  it.each<[string, unknown, Record<string, unknown>]>([
    [
      "placeholders are not checked without parameters",
      { command: "x ${param:zz}", array: { count: 2 } },
      { count: 2 },
    ],
    [
      "the count is the parameters' when left out",
      { command: "x", array: { params: ["a", "b"] } },
      { count: 2, params: ["a", "b"] },
    ],
    [
      "a count that matches the parameters",
      { command: "x", array: { params: ["a"], count: 1 } },
      { count: 1, params: ["a"] },
    ],
    [
      "a parameters file among the inputs",
      { command: "x", inputs: ["p"], array: { paramsFile: "p" } },
      { paramsFile: "p" },
    ],
    ["`array: N` as a count", { command: "x", array: 3 }, { count: 3 }],
    ["a multi-node job of one rank with an array", { command: "x", nodes: 1, array: 2 }, { count: 2 }],
  ])("accepts %s", (_, input, array) => {
    expect(validateJobSpec(input).array).toEqual(array);
  });
});

describe("an array's tasks and parameters", () => {
  const withFile = validateJobSpec({
    command: "x ${param}",
    inputs: ["p"],
    array: { paramsFile: "p", parallel: 2 },
  });
  const withParams = validateJobSpec({ command: "x", array: { params: ["a", "b"] } });
  const plain = validateJobSpec({ command: "x" });

  it.each<[string, JobSpec, string, JobSpec["array"]]>([
    [
      "the file's lines as parameters, its count, no paramsFile",
      withFile,
      "a\nb\nc\n",
      { parallel: 2, count: 3, params: ["a", "b", "c"] },
    ],
    ["no parameters file: the job as it is", withParams, "ignored", withParams.array],
    ["no array: the text is not read", plain, "a\n\nb", undefined],
  ])("resolveParamsFile: %s", (_, spec, text, array) => {
    const resolved = resolveParamsFile(spec, text);
    expect(resolved.array).toEqual(array);
    expect(resolved.inputs).toEqual(spec.inputs);
  });

  it("resolveParamsLines leaves a job without a parameters file as it is", () => {
    expect(resolveParamsLines(plain, ["a"])).toBe(plain);
    expect(resolveParamsLines(withParams, ["a"])).toBe(withParams);
  });

  it.each<[string, JobSpec, string[], string]>([
    [
      "a count that does not match the lines",
      validateJobSpec({ command: "x", inputs: ["p"], array: { paramsFile: "p", count: 3 } }),
      ["a", "b"],
      "array.count: count 3 does not match the 2 parameters of array.paramsFile p (one per line): leave count out, or make them agree",
    ],
    [
      "a line that does not fit the command, by its line number",
      validateJobSpec({ command: "x ${param.k}", inputs: ["p"], array: { paramsFile: "p" } }),
      ["a", "b"],
      "array.paramsFile: p line 1: a string, but the command or env names ${param.k}: a mapping with key k is needed",
    ],
  ])("resolveParamsLines refuses %s", (_, spec, lines, message) => {
    let thrown: unknown;
    try {
      resolveParamsLines(spec, lines);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(JobFileError);
    expect((thrown as JobFileError).message).toBe(message);
  });

  it.each<[string, JobSpec, number, string | undefined, number | undefined, number]>([
    [
      "parameters: task i's, the parallel limit, the count",
      resolveParamsFile(withFile, "a\nb\n"),
      1,
      "b",
      2,
      2,
    ],
    ["parameters past the last task: none", withParams, 2, undefined, undefined, 2],
    ["no array: no parameter, no limit, one task", plain, 0, undefined, undefined, 1],
    ["a parameters file not read yet: one task", withFile, 0, undefined, 2, 1],
  ])("%s", (_, spec, task, param, parallel, count) => {
    expect([taskParam(spec, task), arrayParallel(spec), taskCount(spec)]).toEqual([param, parallel, count]);
  });

  it.each<[{ nodes?: number }, number]>([
    [{}, 1],
    [{ nodes: 4 }, 4],
  ])("nodesOf(%j) is %i", (spec, nodes) => {
    expect(nodesOf(spec)).toBe(nodes);
  });
});

describe("validateJobSpec paths", () => {
  it.each([
    ["inputs", ["a", "../x"], "inputs[1]", "leaves its folder"],
    ["inputs", ["a/../../x"], "inputs[0]", "leaves its folder"],
    ["inputs", ["ok", "fine", "/etc/passwd"], "inputs[2]", "must be a relative path"],
    ["outputs", ["../x"], "outputs[0]", "leaves its folder"],
    ["outputs", ["res", "a/../../x"], "outputs[1]", "leaves its folder"],
    ["outputs", ["/etc/passwd"], "outputs[0]", "must be a relative path"],
    ["outputs", [""], "outputs[0]", "must not be empty"],
  ])("%s %j -> %s", (key, paths, field, problem) => {
    const error = rejection({ command: "x", [key]: paths });
    expect(error.field).toBe(field);
    expect(error.message).toContain(problem);
  });

  it("accepts relative paths that stay inside their folder", () => {
    const spec = validateJobSpec({ command: "x", inputs: ["a/b", "./c", "a/../d"], outputs: ["out/r.txt"] });
    expect(spec.inputs).toEqual(["a/b", "./c", "a/../d"]);
    expect(spec.outputs).toEqual(["out/r.txt"]);
  });
});

describe("relativePathProblem", () => {
  it.each([
    ["a", null],
    ["a/b/c.txt", null],
    ["./a", null],
    ["a/../b", null],
    ["a//b", null],
    ["..x", null],
    ["x..", null],
    ["", "must not be empty"],
    ["a\0b", "must not contain NUL"],
    ["/etc/passwd", "must be a relative path"],
    ["C:/x", "must be a relative path"],
    ["C:\\x", "must be a relative path"],
    ["..", "leaves its folder"],
    ["../x", "leaves its folder"],
    ["a/../../x", "leaves its folder"],
    ["a\\..\\..\\x", "leaves its folder"],
    [".", "must name a file"],
    ["x/..", "must name a file"],
  ])("%j -> %s", (path, problem) => {
    expect(relativePathProblem(path)).toBe(problem);
  });

  it("rejects a path that is absolute once backslashes are read as separators", () => {
    expect(relativePathProblem("\\etc\\passwd")).toBe("must be a relative path");
  });
});

describe("validateJobSpec CEL", () => {
  it.each([
    ["requirements", 'host.arch == "x86_64" && host.memFreeMb >= 512'],
    ["requirements", 'host.labels.tier == "gold"'],
    ["requirements", "host.cpus >= 2.0 && host.slotsFree > 0.0"],
    ["rank", "host.speed * host.cpuFree"],
    ["rank", 'host.name == "s2" ? 10 : 1'],
    ["rank", "host.speed * host.cpus"],
    ["rank", "-host.load1"],
  ])("accepts %s %s", (field, source) => {
    expect(validateJobSpec({ command: "x", [field]: source })[field as "rank"]).toBe(source);
  });

  it.each([
    ["requirements", "host.cpus >", "CEL:"],
    ["requirements", "", "CEL:"],
    ["requirements", "host.gpus > 0", "gpus"],
    ["requirements", "host.cpus", "boolean"],
    ["requirements", '"yes"', "boolean"],
    ["rank", "host.name", "number"],
    ["rank", "host.cpus > 1.0", "number"],
    ["rank", "host.speed * 2", "CEL:"],
    ["rank", "gpus", "CEL:"],
  ])("rejects %s %j naming the field", (field, source, text) => {
    const error = rejection({ command: "x", [field]: source });
    expect(error.field).toBe(field);
    expect(error.message.startsWith(`${field}: CEL: `)).toBe(true);
    expect(error.message).toContain(text);
  });
});

describe("parseJobFileText", () => {
  it("parses YAML", () => {
    const text = [
      "name: cfd",
      'command: ["./ns3d", "input"]',
      "inputs: [ns3d, input]",
      "resources: {cpus: 2, memoryMb: 512}",
      "requirements: 'host.arch == \"x86_64\"'",
      "array:",
      "  count: 4",
    ].join("\n");
    expect(parseJobFileText(text)).toEqual({
      name: "cfd",
      command: ["./ns3d", "input"],
      inputs: ["ns3d", "input"],
      resources: { cpus: 2, memoryMb: 512 },
      requirements: 'host.arch == "x86_64"',
      array: { count: 4 },
    });
  });

  it("parses JSON", () => {
    const text = JSON.stringify({ command: "echo hi", priority: 3, env: { A: "1" } });
    expect(parseJobFileText(text)).toEqual({ command: "echo hi", priority: 3, env: { A: "1" } });
  });

  it("YAML and JSON of the same job validate to the same spec", () => {
    const yaml = validateJobSpec(parseJobFileText("command: [a, b]\nretry: {maxAttempts: 2}\n"));
    const json = validateJobSpec(parseJobFileText('{"command": ["a", "b"], "retry": {"maxAttempts": 2}}'));
    expect(yaml).toEqual(json);
    expect(yaml.retry).toEqual({ maxAttempts: 2, backoffSeconds: 5 });
  });

  it("rejects text that is not YAML", () => {
    let caught: unknown;
    try {
      parseJobFileText("command: [");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(JobFileError);
    expect((caught as JobFileError).field).toBe("");
    expect((caught as JobFileError).message).toMatch(/^line 1, column 11: not valid YAML or JSON: /);
  });

  it.each([["- a\n- b"], ["just text"], [""], ["42"], ["null"]])(
    "a document %j that is not a mapping parses but fails validation",
    (text) => {
      const error = rejection(parseJobFileText(text));
      expect(error.field).toBe("");
      expect(error.message).toContain("mapping");
    },
  );
});

describe("JobFileError", () => {
  it("prefixes the message with the field, and carries it", () => {
    const error = new JobFileError("resources.cpus", "too many");
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe("resources.cpus: too many");
    expect(error.field).toBe("resources.cpus");
  });

  it("has no prefix without a field", () => {
    expect(new JobFileError("", "bad").message).toBe("bad");
  });
});

describe("validateJobSpec workdir (a job run in place)", () => {
  it("keeps the workdir as written, with no files to move", () => {
    const spec = validateJobSpec({ command: "./cfd", workdir: "/data/cfd/run-12/" });
    expect(spec.workdir).toBe("/data/cfd/run-12/");
    expect(spec.inputs).toEqual([]);
    expect(spec.outputs).toEqual([]);
  });

  it("is absent unless given", () => {
    expect(validateJobSpec({ command: "true" })).not.toHaveProperty("workdir");
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    [
      "a relative path",
      { workdir: "data/run1" },
      "workdir",
      '"data/run1" must be an absolute path (starting with /)',
    ],
    [
      "a path with ..",
      { workdir: "/data/../etc" },
      "workdir",
      '"/data/../etc" must not contain .. (name the folder itself)',
    ],
    ["a NUL byte", { workdir: "/data/a\0b" }, "workdir", '"/data/a\\u0000b" must not contain a NUL byte'],
    ["not a string", { workdir: 7 }, "workdir", "Invalid input: expected string, received number"],
    [
      "inputs beside it",
      { workdir: "/data/run1", inputs: ["mesh"] },
      "inputs",
      "a job with workdir runs in place and uploads nothing: it reads its files where they are (drop inputs, or drop workdir)",
    ],
    [
      "outputs beside it",
      { workdir: "/data/run1", outputs: ["residual"] },
      "outputs",
      "a job with workdir runs in place and collects nothing: its files stay in its folder (drop outputs, or drop workdir)",
    ],
    [
      "a parameters file (an input) beside it",
      { workdir: "/data/run1", inputs: ["cases.txt"], array: { paramsFile: "cases.txt" } },
      "array.paramsFile",
      "a job with workdir uploads no file: give the parameters as array.params, or drop workdir",
    ],
    [
      "replicas beside it",
      { workdir: "/data/run1", replicas: 2 },
      "replicas",
      "replicas of a job with workdir would write in its one folder at once: drop one or the other",
    ],
  ])("refuses %s, naming the field", (_, fields, field, message) => {
    const error = rejection({ command: "x", ...fields });
    expect(error.field).toBe(field);
    expect(error.problem).toBe(message);
  });

  it.each<[string, Record<string, unknown>]>([
    ["an array with params", { array: { params: ["a", "b"] } }],
    ["an array by count", { array: 3 }],
    ["one replica", { replicas: 1 }],
    ["a multi-node job", { nodes: 2 }],
    ["empty inputs and outputs", { inputs: [], outputs: [] }],
  ])("takes %s", (_, fields) => {
    expect(validateJobSpec({ command: "x", workdir: "/data/run1", ...fields }).workdir).toBe("/data/run1");
  });
});
