import { describe, expect, it } from "vitest";
import {
  JobFileError,
  parseJobFileText,
  relativePathProblem,
  taskCount,
  validateJobSpec,
} from "../../src/common/model/job-spec.ts";

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
