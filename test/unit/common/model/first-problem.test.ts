import { describe, expect, it } from "vitest";
import { z } from "zod";
import { firstProblem } from "../../../../src/common/model/first-problem.ts";
import { jobSpecSchema } from "../../../../src/common/model/job-spec.ts";

describe("firstProblem of any schema's error", () => {
  type Issue = z.core.$ZodIssue;
  const typeIssue = (path: (string | number)[], expected = "string"): Issue =>
    ({ code: "invalid_type", expected, input: undefined, path, message: `no ${expected}` }) as Issue;
  const union = (path: (string | number)[], errors: Issue[][]): Issue =>
    ({ code: "invalid_union", errors, input: undefined, path, message: "no form" }) as Issue;
  const tooSmall = (path: (string | number)[]): Issue =>
    ({ code: "too_small", origin: "number", minimum: 1, input: 0, path, message: "too small" }) as Issue;

  it.each<[string, Issue[], unknown, string]>([
    ["the value's own type at the top is not a key left out", [typeIssue([])], {}, ": no string"],
    ["a key the mapping lacks: required", [typeIssue(["a"])], { b: 1 }, "a: required"],
    ["a key the mapping has: the problem", [typeIssue(["a"])], { a: 1 }, "a: no string"],
    [
      "a key under a mapping that lacks it: required",
      [typeIssue(["a", "b"])],
      { a: {}, b: 1 },
      "a.b: required",
    ],
    ["under a mapping that has it: the problem", [typeIssue(["a", "b"])], { a: { b: 1 } }, "a.b: no string"],
    ["under a list: the problem", [typeIssue(["a", 1])], { a: [1] }, "a[1]: no string"],
    ["under text: the problem", [typeIssue(["a", "b"])], { a: "text" }, "a.b: no string"],
    ["under text, deeper: the problem", [typeIssue(["a", "b", "c"])], { a: "text" }, "a.b.c: no string"],
    ["under null: the problem", [typeIssue(["a", "b"])], { a: null }, "a.b: no string"],
    ["under null, deeper: the problem", [typeIssue(["a", "b", "c"])], { a: null }, "a.b.c: no string"],
    ["a problem of another kind at a key left out: the problem", [tooSmall(["a"])], {}, "a: too small"],
    ["a union without branches: its own message", [union(["a"], [])], { a: 1 }, "a: no form"],
    [
      "a union of one form: that form",
      [union(["a"], [[typeIssue([], "number")]])],
      { a: "x" },
      "a: expected number",
    ],
    [
      "a union's branch without issues is passed over",
      [union(["a"], [[], [typeIssue(["b"])]])],
      { a: { b: 1 } },
      "a.b: no string",
    ],
    [
      "a union's empty branch among its forms: no form listed, the other's problem",
      [union(["a"], [[], [typeIssue([], "number")]])],
      { a: "x" },
      "a: no number",
    ],
    [
      "of two branches as deep, the first",
      [union(["a"], [[typeIssue(["b"])], [typeIssue(["c"], "number")]])],
      { a: { b: 1, c: "x" } },
      "a.b: no string",
    ],
    [
      "a branch going deeper than the first",
      [union(["a"], [[typeIssue(["b"])], [typeIssue(["c", "d"], "number")]])],
      { a: { b: 1, c: { d: "x" } } },
      "a.c.d: no number",
    ],
    [
      "a branch's problem of another kind at the value: the first branch's, not the forms",
      [union(["a"], [[typeIssue([], "number")], [tooSmall([])]])],
      { a: 0 },
      "a: no number",
    ],
  ])("%s", (_, issues, input, message) => {
    const { field, message: problem } = firstProblem(new z.ZodError(issues), { input });
    expect(`${field}: ${problem}`).toBe(message);
  });

  it.each<[string, unknown, string]>([
    ["no aliases: a near key", { command: "x", comand: "y" }, "unknown key (did you mean command?)"],
    ["no aliases: an alias is no suggestion", { command: "x", walltime: 5 }, "unknown key"],
  ])("an unknown key with the schema: %s", (_, input, message) => {
    const result = jobSpecSchema.safeParse(input);
    expect(result.success).toBe(false);
    if (!result.success)
      expect(firstProblem(result.error, { input, schema: jobSpecSchema }).message).toBe(message);
  });
});
