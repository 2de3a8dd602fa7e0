// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${param}` is the job file's placeholder, written as users write it
import { describe, expect, it } from "vitest";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../src/broker/reactor/handlers/agent-reports.ts";
import { submitJob } from "../../../../src/broker/reactor/handlers/submit.ts";
import {
  paramEnvironment,
  paramsFileLines,
  paramsProblem,
  paramVariable,
  placeholderProblem,
  placeholdersOf,
  substituteParam,
  type TaskParam,
  taskLaunch,
} from "../../../../src/common/model/array-params.ts";
import { resolveParamsFile, taskCount, validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";
import { ended, hello } from "../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../helpers/handler-bench.ts";

describe("paramVariable", () => {
  it.each([
    ["seed", "STEWARD_PARAM_SEED"],
    ["Input-File", "STEWARD_PARAM_INPUT_FILE"],
    ["n_2", "STEWARD_PARAM_N_2"],
    ["3d", "STEWARD_PARAM_3D"],
  ])("%s -> %s", (key, variable) => expect(paramVariable(key)).toBe(variable));
});

describe("substituteParam", () => {
  const object: TaskParam = { seed: 7, name: "run a", fast: true };
  it.each<[string, TaskParam, string]>([
    ["./sim ${param}", "case1.dat", "./sim case1.dat"],
    ["${param}-${param}", "x", "x-x"],
    ["--seed=${param.seed} ${param.name} ${param.fast}", object, "--seed=7 run a true"],
    ["${param}", object, '{"seed":7,"name":"run a","fast":true}'],
    // The escape: `$${...}` stays `${...}` as written.
    ["echo $${param} $${param.seed}", object, "echo ${param} ${param.seed}"],
    // Other `${...}` are the shell's.
    ["echo ${HOME} $param ${params}", "x", "echo ${HOME} $param ${params}"],
    ["no placeholder", "x", "no placeholder"],
    // `:q`: one shell-quoted word.
    ["./sim ${param:q}", "x$(id)", "./sim 'x$(id)'"],
    ["echo ${param:q}", "it's", "echo 'it'\\''s'"],
    ["echo ${param:q}", "", "echo ''"],
    ["--name ${param.name:q} --seed ${param.seed:q}", object, "--name 'run a' --seed '7'"],
    ["${param:q}", { a: "'" }, `'{"a":"'\\''"}'`],
    ["echo $${param:q}", "x", "echo ${param:q}"],
  ])("%s", (text, param, expected) => expect(substituteParam(text, param)).toBe(expected));

  it.each<[string, string | null]>([
    ["${param} ${param:q} ${param.k:q} $${param:z}", null],
    ["echo ${param:x}", "${param:x}: no modifier :x (${param:q} is the parameter as one shell word)"],
    ["echo ${param.k:Q}", "${param.k:Q}: no modifier :Q"],
    ["echo ${param:}", "${param:}: no modifier :"],
  ])("placeholderProblem(%j)", (text, problem) => {
    const found = placeholderProblem(text);
    if (problem === null) expect(found).toBeNull();
    else expect(found).toContain(problem);
  });

  it("throws for a key the parameter lacks", () => {
    expect(() => substituteParam("${param.seed}", "x")).toThrow(/no key seed/);
    expect(() => substituteParam("${param.other}", object)).toThrow(/no key other/);
  });
});

describe("paramEnvironment and taskLaunch", () => {
  it("gives a string as STEWARD_TASK_PARAM alone", () => {
    expect(paramEnvironment("a b")).toEqual({ STEWARD_TASK_PARAM: "a b" });
  });
  it("gives a mapping as JSON and one variable per key", () => {
    expect(paramEnvironment({ seed: 7, "in-file": "x.dat", ok: false })).toEqual({
      STEWARD_TASK_PARAM: '{"seed":7,"in-file":"x.dat","ok":false}',
      STEWARD_PARAM_SEED: "7",
      STEWARD_PARAM_IN_FILE: "x.dat",
      STEWARD_PARAM_OK: "false",
    });
  });
  it("puts the parameter into the command (either form) and the env values", () => {
    expect(
      taskLaunch(["./sim", "${param.in}"], { SEED: "${param.seed}", A: "b" }, { in: "a.dat", seed: 3 }),
    ).toEqual({
      command: ["./sim", "a.dat"],
      env: {
        SEED: "3",
        A: "b",
        STEWARD_TASK_PARAM: '{"in":"a.dat","seed":3}',
        STEWARD_PARAM_IN: "a.dat",
        STEWARD_PARAM_SEED: "3",
      },
    });
    expect(taskLaunch("echo ${param}", {}, "x").command).toBe("echo x");
  });
});

describe("paramsProblem", () => {
  const uses = (command: string, env: Record<string, string> = {}) => ({ command, env });
  it.each<[string, TaskParam[], ReturnType<typeof uses>, string | null]>([
    ["strings, ${param}", ["a", "b"], uses("echo ${param}"), null],
    ["mappings with the keys named", [{ a: 1 }, { a: 2, b: 3 }], uses("x ${param.a}"), null],
    ["a key named in env", [{ a: 1 }], uses("x", { A: "${param.b}" }), "array.params[0]: has no key b"],
    ["a string where a key is named", ["a"], uses("x ${param.a}"), "array.params[0]: a string, but"],
    ["an escaped key is not named", ["a"], uses("x $${param.a}"), null],
    ["a bad key", [{ "a b": 1 }], uses("x"), "array.params[0].a b: not a parameter key"],
    [
      "keys that give one variable",
      [{ "a-b": 1, a_b: 2 }],
      uses("x"),
      "array.params[0]: keys a-b and a_b would both be STEWARD_PARAM_A_B",
    ],
    ["a parameter too long", ["x".repeat(40_000)], uses("x"), "array.params[0]: longer than 32768"],
  ])("%s", (_name, params, use, expected) => {
    const problem = paramsProblem(params, use);
    if (expected === null) expect(problem).toBeNull();
    else {
      const key = problem?.key === undefined ? "" : `.${problem.key}`;
      expect(`array.params[${problem?.index}]${key}: ${problem?.message}`).toContain(expected);
    }
  });
});

describe("paramsFileLines", () => {
  it.each<[string, string[]]>([
    ["a\nb\nc\n", ["a", "b", "c"]],
    ["a\nb\nc", ["a", "b", "c"]],
    ["a\r\nb c\r\n", ["a", "b c"]],
    ["only", ["only"]],
  ])("%j", (text, lines) => expect(paramsFileLines(text, "f")).toEqual(lines));

  it.each([
    ["", "f is empty"],
    ["\n", "f is empty"],
    ["a\n\nb\n", "f: line 2 is empty"],
    ["a\n\n", "f: line 2 is empty"],
  ])("refuses %j", (text, message) => {
    expect(() => paramsFileLines(text, "f")).toThrow(message);
  });

  it("takes 100,000 lines", () => {
    const text = Array.from({ length: 100_000 }, (_, i) => `case-${i}`).join("\n");
    expect(paramsFileLines(text, "f")).toHaveLength(100_000);
  });
});

describe("the job file's array", () => {
  const problem = (array: unknown, extra: Record<string, unknown> = {}) => {
    try {
      validateJobSpec({ command: "echo ${param}", array, ...extra });
      return null;
    } catch (error) {
      if (error instanceof JobFileError) return error.message;
      throw error;
    }
  };

  it.each<[string, unknown, Record<string, unknown>, string | null]>([
    ["a number", 5, {}, null],
    ["a count", { count: 5, parallel: 2 }, {}, null],
    ["params alone", { params: ["a", "b"] }, {}, null],
    ["params with the same count", { count: 2, params: ["a", "b"] }, {}, null],
    [
      "params with another count",
      { count: 3, params: ["a", "b"] },
      {},
      "array.count: count 3 does not match the 2 parameters of array.params",
    ],
    ["no count", { parallel: 2 }, {}, "array: give count, params or paramsFile"],
    ["a zero throttle", { count: 2, parallel: 0 }, {}, "array.parallel"],
    [
      "params and a file",
      { params: ["a"], paramsFile: "p" },
      { inputs: ["p"] },
      "array.paramsFile: give params or paramsFile, not both",
    ],
    ["a file among the inputs", { paramsFile: "p.txt" }, { inputs: ["p.txt"] }, null],
    [
      "a file not an input",
      { paramsFile: "p.txt" },
      {},
      "array.paramsFile: p.txt is not one of the job's inputs",
    ],
    ["a file out of its folder", { paramsFile: "../p" }, { inputs: ["../p"] }, "inputs[0]"],
    ["a bad value", { params: [{ a: [1] }] }, {}, "array.params[0].a: expected string, number or boolean"],
    ["an unknown key", { count: 1, each: 2 }, {}, "array"],
  ])("%s", (_name, array, extra, expected) => {
    const message = problem(array, extra);
    if (expected === null) expect(message).toBeNull();
    else expect(message).toContain(expected);
  });

  it("counts the tasks from the params", () => {
    expect(taskCount(validateJobSpec({ command: "x", array: { params: ["a", "b", "c"] } }))).toBe(3);
    expect(taskCount(validateJobSpec({ command: "x", array: 4 }))).toBe(4);
  });
});

describe("resolveParamsFile", () => {
  const spec = (array: Record<string, unknown>) =>
    validateJobSpec({
      command: ["./sim", "${param}"],
      inputs: ["p.txt"],
      array: { paramsFile: "p.txt", ...array },
    });

  it("makes the file's lines the params and their number the count", () => {
    const resolved = resolveParamsFile(spec({ parallel: 2 }), "a\nb\nc\n");
    expect(resolved.array).toEqual({ count: 3, parallel: 2, params: ["a", "b", "c"] });
    // What is stored passes the job file's checks again (an update checks it so).
    expect(validateJobSpec(resolved).array).toEqual(resolved.array);
  });

  it("refuses a count that does not match, naming both", () => {
    expect(() => resolveParamsFile(spec({ count: 4 }), "a\nb\n")).toThrow(
      "array.count: count 4 does not match the 2 parameters of array.paramsFile p.txt (one per line)",
    );
  });

  it("refuses lines where the command names a key: lines are strings", () => {
    const keyed = validateJobSpec({
      command: "x ${param.seed}",
      inputs: ["p.txt"],
      array: { paramsFile: "p.txt" },
    });
    expect(() => resolveParamsFile(keyed, "1\n")).toThrow(
      "array.paramsFile: p.txt line 1: a string, but the command or env names ${param.seed}",
    );
  });

  it("refuses a line too long, naming its number", () => {
    expect(() => resolveParamsFile(spec({}), `a\n${"x".repeat(40_000)}\n`)).toThrow(
      "array.paramsFile: p.txt line 2: longer than 32768 characters",
    );
  });
});

describe("a task's start carries its own parameter, also after a restart", () => {
  const bench = (slots: number) => {
    const b = new HandlerBench();
    b.run((step) => attachHost(step, hello("h1", [], slots)));
    return b;
  };

  it("substitutes the command and env and sets the variables, each task its own", () => {
    const b = bench(2);
    const spec = validateJobSpec({
      command: ["./sim", "--seed", "${param.seed}", "$${param}"],
      env: { CASE: "case-${param.name}" },
      array: {
        params: [
          { seed: 1, name: "a" },
          { seed: 2, name: "b" },
          { seed: 3, name: "c" },
        ],
        parallel: 2,
      },
    });
    b.run((step) => submitJob(step, { id: "1", spec, owner: "alice", inputs: [] }));
    b.settle();
    const starts = b.starts();
    expect(starts.map((start) => start.taskIndex)).toEqual([0, 1]);
    expect(starts[1].command).toEqual(["./sim", "--seed", "2", "${param}"]);
    expect(starts[1].env).toEqual({
      CASE: "case-b",
      STEWARD_TASK_PARAM: '{"seed":2,"name":"b"}',
      STEWARD_PARAM_SEED: "2",
      STEWARD_PARAM_NAME: "b",
    });
    // A broker rebuilt from the store knows the parameters and what holds slots.
    const restarted = b.restart();
    const job = restarted.state.jobs.get("1")!;
    expect(job.liveTasks).toBe(2);
    const held = [0, 1].map((taskIndex) => ({
      jobId: "1",
      taskIndex,
      attempt: 1,
      state: "running" as const,
    }));
    restarted.run((step) => attachHost(step, hello("h1", held, 2)));
    restarted.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
    restarted.run((step) => attemptEnded(step, "h1", ended("1", 1)));
    restarted.settle();
    const [third] = restarted.starts();
    expect(third).toMatchObject({ taskIndex: 2, command: ["./sim", "--seed", "3", "${param}"] });
    expect(third.env.STEWARD_TASK_PARAM).toBe('{"seed":3,"name":"c"}');
  });

  it("leaves a job without parameters as it is written", () => {
    const b = bench(1);
    const spec = validateJobSpec({ command: "echo ${param}", env: { A: "${param}" }, array: 1 });
    b.run((step) => submitJob(step, { id: "1", spec, owner: "alice", inputs: [] }));
    b.settle();
    expect(b.starts()[0]).toMatchObject({ command: "echo ${param}", env: { A: "${param}" } });
  });
});

describe("placeholdersOf", () => {
  it.each<[string, { whole: boolean; keys: string[] }]>([
    ["no placeholder", { whole: false, keys: [] }],
    ["${param.a} and ${param.b:q}", { whole: false, keys: ["a", "b"] }],
    ["${param}", { whole: true, keys: [] }],
    ["${param:q} ${param.a}", { whole: true, keys: ["a"] }],
    ["$${param} $${param.a}", { whole: false, keys: [] }],
  ])("%s", (text, found) => {
    expect(placeholdersOf(text)).toEqual(found);
  });
});

describe("substituteParam's refusals", () => {
  it.each<[string, TaskParam, string]>([
    ["${param:x}", "v", "${param:x}: no modifier :x"],
    ["${param.a:Q}", { a: 1 }, "${param.a:Q}: no modifier :Q"],
    ["${param.length}", "abc", "${param.length}: the task's parameter has no key length"],
    ["${param.0}", "abc", "${param.0}: the task's parameter has no key 0"],
  ])("%s of %j", (text, param, message) => {
    expect(() => substituteParam(text, param)).toThrow(new Error(message));
  });
});

describe("paramsProblem at the length's limit", () => {
  it.each<[string, number, boolean]>([
    ["a parameter of the longest length", 32_768, true],
    ["one character longer", 32_769, false],
  ])("%s", (_, length, taken) => {
    const problem = paramsProblem(["x".repeat(length)], { command: "x", env: {} });
    expect(problem).toEqual(taken ? null : { index: 0, message: "longer than 32768 characters" });
  });

  it("reads a key named in an output's `to` only", () => {
    const uses = { command: "x", env: {}, outputs: ["${param.a}", { to: "s3://b/${param.b}" }] };
    expect(paramsProblem([{ b: 1 }], uses)).toBeNull();
    expect(paramsProblem([{ a: 1 }], uses)).toEqual({
      index: 0,
      message: "has no key b, which the command or env names (${param.b})",
    });
  });
});

describe("paramsFileLines' refusals", () => {
  it.each<[string, string]>([
    ["", "p.txt is empty: it needs one line per task"],
    ["a\n\nb\n", "p.txt: line 2 is empty (each line is one task's parameter)"],
  ])("%j names array.paramsFile", (text, problem) => {
    let refusal: unknown;
    try {
      paramsFileLines(text, "p.txt");
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(JobFileError);
    expect([(refusal as JobFileError).field, (refusal as JobFileError).problem]).toEqual([
      "array.paramsFile",
      problem,
    ]);
  });
});
