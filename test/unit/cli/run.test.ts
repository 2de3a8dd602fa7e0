// `steward run`'s rules: the job file its options make, the server's messages named by flag, the
// exit code a job's end gives, and the task-index prefix of an array's lines.

import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import {
  envVariable,
  FIELD_FLAGS,
  firstUnsucceeded,
  flagMessage,
  LinePrefixer,
  NO_EXIT_CODE,
  type RunOptions,
  runJobFile,
  taskExitCode,
  wholeNumber,
} from "../../../src/cli/run-job.ts";
import { validateJobSpec } from "../../../src/common/model/job-spec.ts";

const NONE: RunOptions = { input: [], output: [], env: {} };

describe("the job file of steward run", () => {
  it.each<[string, RunOptions, Record<string, unknown>]>([
    ["no options: the command alone, as argv", NONE, { command: ["sh", "-c", "echo hi"] }],
    [
      "resources",
      { ...NONE, cpus: 4, memoryMb: 512, gpus: 1 },
      { command: ["sh", "-c", "echo hi"], resources: { cpus: 4, memoryMb: 512, gpus: 1 } },
    ],
    [
      "an array's throttle",
      { ...NONE, array: 10, parallel: 3 },
      { command: ["sh", "-c", "echo hi"], array: { count: 10, parallel: 3 } },
    ],
    [
      "a workdir: the job runs in place",
      { ...NONE, workdir: "/data/cfd/run-12" },
      { command: ["sh", "-c", "echo hi"], workdir: "/data/cfd/run-12" },
    ],
    [
      "every other option",
      {
        name: "n",
        requirements: 'host.arch == "x86_64"',
        rank: "host.speed",
        array: 4,
        input: ["a", "b"],
        output: ["c"],
        env: { A: "1" },
        checkpointInterval: 30,
        retry: 3,
        timeLimit: 60,
        priority: -2,
        qos: "high",
        detach: true,
      },
      {
        command: ["sh", "-c", "echo hi"],
        name: "n",
        requirements: 'host.arch == "x86_64"',
        rank: "host.speed",
        array: { count: 4 },
        inputs: ["a", "b"],
        outputs: ["c"],
        env: { A: "1" },
        checkpoint: { intervalSeconds: 30 },
        retry: { maxAttempts: 3 },
        timeLimitSeconds: 60,
        priority: -2,
        qos: "high",
      },
    ],
  ])("%s", (_, options, expected) => {
    const job = runJobFile(["sh", "-c", "echo hi"], options);
    expect(job).toEqual(expected);
    // What it makes is a valid job file.
    expect(() => validateJobSpec(job)).not.toThrow();
  });
});

describe("the server's message on the job file, named by run's flag", () => {
  it.each([
    ["resources.cpus: Too small: expected number to be >=1", "--cpus: Too small: expected number to be >=1"],
    ["resources.memoryMb: too big", "--memory-mb: too big"],
    ["inputs[1]: ../x: leaves the folder", "--input: ../x: leaves the folder"],
    ["env.1A: not a valid variable name", "--env: not a valid variable name"],
    ["array.count: Too big", "--array: Too big"],
    ["array.parallel: Too small", "--parallel: Too small"],
    ["retry.maxAttempts: Too small", "--retry: Too small"],
    ["checkpoint.intervalSeconds: Too small", "--checkpoint-interval: Too small"],
    ["timeLimitSeconds: Too small", "--time-limit: Too small"],
    ["workdir: must be an absolute path", "--workdir: must be an absolute path"],
    ["qos: user alice may not use QoS high", "--qos: user alice may not use QoS high"],
    ["requirements: unknown fact host.x", "--requirements: unknown fact host.x"],
    ["command: Too small", "the command: Too small"],
    ["colour: unknown key", "colour: unknown key"],
    ["too many submits from alice's token", "too many submits from alice's token"],
  ])("%s", (message, expected) => {
    expect(flagMessage(message)).toBe(expected);
  });

  it("names a flag for each field a run option sets", () => {
    for (const flag of Object.values(FIELD_FLAGS)) expect(flag).toMatch(/^(--[a-z-]+|the command)$/);
  });
});

describe("--env and whole numbers", () => {
  it.each([
    ["A=1", { A: "1" }],
    ["GREETING=hello there", { GREETING: "hello there" }],
    ["EMPTY=", { EMPTY: "" }],
    ["URL=a=b", { URL: "a=b" }],
  ])("--env %s", (value, expected) => {
    expect(envVariable(value)).toEqual(expected);
  });

  it.each(["A", "=1", "1A=2", "A-B=1"])("--env %s is refused", (value) => {
    expect(() => envVariable(value)).toThrow(InvalidArgumentError);
  });

  it("accumulates --env", () => {
    expect(envVariable("B=2", envVariable("A=1"))).toEqual({ A: "1", B: "2" });
  });

  it.each([
    ["3", 3],
    ["-2", -2],
    ["0", 0],
  ])("whole number %s", (value, expected) => {
    expect(wholeNumber("--priority")(value)).toBe(expected);
  });

  it.each(["", "1.5", "x"])("whole number %j is refused, naming the flag", (value) => {
    expect(() => wholeNumber("--priority")(value)).toThrow("--priority needs a whole number");
  });
});

describe("the exit code of steward run", () => {
  const attempt = (number: number, exitCode: number | null) => ({ number, exitCode });
  it.each<[string, { state: string; attempts: { number: number; exitCode: number | null }[] }, number]>([
    ["succeeded", { state: "succeeded", attempts: [attempt(1, 0)] }, 0],
    ["succeeded after a failure", { state: "succeeded", attempts: [attempt(1, 3), attempt(2, 0)] }, 0],
    ["failed with a code", { state: "failed", attempts: [attempt(1, 3)] }, 3],
    ["retried: the latest failure's code", { state: "failed", attempts: [attempt(2, 7), attempt(1, 3)] }, 7],
    [
      "lost after a failure: the failure's code",
      { state: "failed", attempts: [attempt(1, 4), attempt(2, null)] },
      4,
    ],
    ["lost, no code", { state: "failed", attempts: [attempt(1, null)] }, NO_EXIT_CODE],
    ["cancelled before it started", { state: "cancelled", attempts: [] }, NO_EXIT_CODE],
    [
      "failed with exit 0 (e.g. an output missing)",
      { state: "failed", attempts: [attempt(1, 0)] },
      NO_EXIT_CODE,
    ],
  ])("%s", (_, task, expected) => {
    expect(taskExitCode(task)).toBe(expected);
  });

  it.each<[string, number | null]>([
    ["ssss", null],
    ["sfsc", 1],
    ["cs", 0],
    ["", null],
  ])("the first task of %j that did not succeed", (states, expected) => {
    expect(firstUnsucceeded(states, "s")).toBe(expected);
  });
});

describe("an array task's lines, prefixed", () => {
  const encode = (text: string) => new TextEncoder().encode(text);
  it.each<[string, string[], string]>([
    ["whole lines", ["a\nb\n"], "3: a\n3: b\n"],
    ["a line across chunks", ["a", "b\nc", "\n"], "3: ab\n3: c\n"],
    ["the last line without its newline", ["a\nb"], "3: a\n3: b\n"],
    ["an empty line", ["\n"], "3: \n"],
    ["nothing", [], ""],
  ])("%s", (_, chunks, expected) => {
    let written = "";
    const lines = new LinePrefixer("3: ", (text) => {
      written += text;
    });
    for (const chunk of chunks) lines.push(encode(chunk));
    lines.end();
    expect(written).toBe(expected);
  });

  it("keeps a UTF-8 character split between two chunks whole", () => {
    let written = "";
    const lines = new LinePrefixer("0: ", (text) => {
      written += text;
    });
    const bytes = encode("é\n");
    lines.push(bytes.slice(0, 1));
    lines.push(bytes.slice(1));
    lines.end();
    expect(written).toBe("0: é\n");
  });
});
