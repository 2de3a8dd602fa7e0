// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${param}` is the job file's placeholder, written as users write it
// A job's outputs as tables: plain paths and `{path, to}` side by side, what the server keeps and
// what the agent pushes (an array's parameter put in `to`, URL-encoded), and each malformed or
// clashing output refused naming its field.

import { describe, expect, it } from "vitest";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";
import {
  namesParam,
  outputPaths,
  outputUrlProblem,
  pushedOutputs,
  storedOutputs,
} from "../../../../src/common/model/output-spec.ts";

/** The field and message a job file is refused with, or null when it is accepted. */
function refusal(job: Record<string, unknown>): { field: string; problem: string } | null {
  try {
    validateJobSpec({ command: "true", ...job });
    return null;
  } catch (error) {
    if (!(error instanceof JobFileError)) throw error;
    return { field: error.field, problem: error.problem };
  }
}

describe("outputs accepted", () => {
  it("keeps plain paths for the server and pushes the others", () => {
    const spec = validateJobSpec({
      command: "true",
      outputs: ["a.txt", { path: "b/c.csv", to: "s3://results/c.csv" }, { path: "d", to: "https://h/up/d" }],
    });
    expect(storedOutputs(spec.outputs)).toStrictEqual(["a.txt"]);
    expect(outputPaths(spec.outputs)).toStrictEqual(["a.txt", "b/c.csv", "d"]);
    expect(pushedOutputs(spec.outputs, undefined)).toStrictEqual([
      { path: "b/c.csv", to: "s3://results/c.csv" },
      { path: "d", to: "https://h/up/d" },
    ]);
  });

  it("puts each task's parameter in `to`, URL-encoded", () => {
    const spec = validateJobSpec({
      command: "true",
      array: { params: ["a b", "x/y"] },
      outputs: [{ path: "o", to: "s3://results/${param}.csv" }],
    });
    expect(pushedOutputs(spec.outputs, "a b")).toStrictEqual([{ path: "o", to: "s3://results/a%20b.csv" }]);
    expect(pushedOutputs(spec.outputs, "x/y")).toStrictEqual([{ path: "o", to: "s3://results/x%2Fy.csv" }]);
  });

  it("puts a parameter's key in `to`", () => {
    const spec = validateJobSpec({
      command: "true",
      array: { params: [{ run: 7, name: "c&d" }] },
      outputs: [{ path: "o", to: "https://h/${param.name}/${param.run}?x=$${param}" }],
    });
    expect(pushedOutputs(spec.outputs, { run: 7, name: "c&d" })).toStrictEqual([
      { path: "o", to: "https://h/c%26d/7?x=${param}" },
    ]);
  });

  it("a path may be both kept and pushed", () => {
    expect(refusal({ outputs: ["a", { path: "a", to: "s3://bkt/a" }] })).toBeNull();
  });
});

describe("outputs refused, naming the field", () => {
  it.each([
    [
      "a path leaving the folder",
      [{ path: "../x", to: "s3://bkt/x" }],
      "outputs[0].path",
      '"../x" leaves its folder',
    ],
    [
      "an absolute path",
      [{ path: "/x", to: "s3://bkt/x" }],
      "outputs[0].path",
      '"/x" must be a relative path',
    ],
    [
      "another scheme",
      [{ path: "x", to: "ftp://h/x" }],
      "outputs[0].to",
      "must be an http:, https: or s3: URL, not ftp:",
    ],
    ["not a URL", [{ path: "x", to: "results/x" }], "outputs[0].to", "is not a URL"],
    [
      "an s3: URL without a key",
      [{ path: "x", to: "s3://bkt" }],
      "outputs[0].to",
      "names no key: s3://bucket/key",
    ],
    ["no to", [{ path: "x" }], "outputs[0].to", "required"],
    ["an unknown key", [{ path: "x", to: "s3://bkt/x", sha256: "y" }], "outputs[0].sha256", "unknown key"],
    ["neither a path nor a mapping", [3], "outputs[0]", "expected string or object"],
  ])("%s", (_, outputs, field, problem) => {
    expect(refusal({ outputs })).toStrictEqual({ field, problem });
  });

  it.each([
    [
      "replicas",
      { replicas: 2 },
      "every replica that succeeds would push to this one URL: drop replicas, or make it a plain output",
    ],
    [
      "every rank's outputs",
      { nodes: 2, outputsFrom: "all" },
      "with outputsFrom: all every rank would push to this one URL: collect it from rank 0, or make it a plain output",
    ],
    [
      "an array without a parameter in to",
      { array: 3 },
      "every task of the array would push to this one URL: name each task's own with ${param} or ${param.KEY} (array.params)",
    ],
    [
      "a parameter without an array",
      { to: "s3://bkt/${param}" },
      "names ${param}, but the job has no array parameters (array.params or array.paramsFile)",
    ],
    [
      "a parameter in an array of a count alone",
      { array: 3, to: "s3://bkt/${param}" },
      "names ${param}, but the job has no array parameters (array.params or array.paramsFile)",
    ],
  ])("%s", (_, job, problem) => {
    const { to = "s3://bkt/x", ...rest } = job as { to?: string };
    expect(refusal({ ...rest, outputs: ["kept", { path: "x", to }] })).toStrictEqual({
      field: "outputs[1].to",
      problem,
    });
  });

  it("a key the parameters do not have", () => {
    expect(
      refusal({ array: { params: [{ a: 1 }] }, outputs: [{ path: "x", to: "s3://bkt/${param.b}" }] }),
    ).toStrictEqual({
      field: "array.params[0]",
      problem: "has no key b, which the command or env names (${param.b})",
    });
  });

  it("a modifier other than :q", () => {
    expect(
      refusal({ array: { params: ["a"] }, outputs: [{ path: "x", to: "s3://bkt/${param:z}" }] }),
    ).toStrictEqual({
      field: "outputs[0].to",
      problem: "${param:z}: no modifier :z (${param:q} is the parameter as one shell word)",
    });
  });

  it("outputs with workdir", () => {
    expect(refusal({ workdir: "/data/x", outputs: [{ path: "x", to: "s3://bkt/x" }] })?.field).toBe(
      "outputs",
    );
  });
});

describe("namesParam and outputUrlProblem", () => {
  it.each([
    ["s3://bkt/${param}", true],
    ["s3://bkt/${param.k}", true],
    ["s3://bkt/$${param}", false],
    ["s3://bkt/param", false],
  ])("%s", (to, names) => {
    expect(namesParam(to)).toBe(names);
  });

  it.each([
    ["s3://bkt/${param}", null],
    ["https://h/${param.k:q}", null],
    [
      "s3://${param}/k",
      'bucket "x" is not a bucket name (3 to 255 letters, digits, dots, hyphens, underscores)',
    ],
    ["http://", "is not a URL"],
  ])("%s", (to, problem) => {
    expect(outputUrlProblem(to)).toBe(problem);
  });
});
