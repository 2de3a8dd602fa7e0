import { describe, expect, it } from "vitest";
import { lineMatches, outputMismatch, tourSteps } from "../helpers/doc-tour.ts";

describe("tourSteps", () => {
  it("reads the console blocks' commands with their output, exit codes and background marks", () => {
    const doc = [
      "Text.",
      "```sh",
      "$ not-a-step",
      "```",
      "```console",
      "$ bin/steward up &    # server and agent",
      "$ bin/steward run -- sh -c 'echo hi; exit 3'   # prints the line, exits 3",
      "hi",
      "$ echo '# not a comment' # exits 0",
      "# not a comment",
      "$ printf 'a\\n' \\",
      "  > x.txt && true",
      "```",
      "```console",
      "$ cat x.txt",
      "a",
      "",
      "```",
    ].join("\n");
    expect(tourSteps(doc)).toEqual([
      { command: "bin/steward up", background: true, expected: [], exitCode: 0, line: 6 },
      {
        command: "bin/steward run -- sh -c 'echo hi; exit 3'   # prints the line, exits 3",
        background: false,
        expected: ["hi"],
        exitCode: 3,
        line: 7,
      },
      {
        command: "echo '# not a comment' # exits 0",
        background: false,
        expected: ["# not a comment"],
        exitCode: 0,
        line: 9,
      },
      {
        command: "printf 'a\\n' \n  > x.txt && true",
        background: false,
        expected: [],
        exitCode: 0,
        line: 11,
      },
      { command: "cat x.txt", background: false, expected: ["a", ""], exitCode: 0, line: 15 },
    ]);
  });
});

describe("lineMatches", () => {
  it.each([
    ["job 1: succeeded", "job 1: succeeded", true],
    ["job 1: succeeded", "job 1: failed", false],
    ["job 1: ...", "job 1: failed", true],
    ["job ...: succeeded", "job 12: succeeded", true],
    ["job ...: succeeded", "job 12: succeeded (2 tasks)", false],
    ["a.b", "axb", false],
    ["(1+1)", "(1+1)", true],
    ["padded", "padded   ", true],
  ])("%j against %j: %s", (pattern, line, expected) => {
    expect(lineMatches(pattern, line)).toBe(expected);
  });
});

describe("outputMismatch", () => {
  it.each([
    [["a", "b"], ["a", "b"], true],
    [["a", "b"], ["a", "b", ""], true],
    [["a", "b"], ["a"], false],
    [["a"], ["a", "b"], false],
    [["a", "...", "d"], ["a", "b", "c", "d"], true],
    [["a", "...", "d"], ["a", "d"], true],
    [["a", "...", "d"], ["a", "b"], false],
    [["...", "x ..."], ["1", "2", "x 3"], true],
    [[], [], true],
    [[], ["something"], false],
  ])("%j against %j: matches %s", (expected, actual, matches) => {
    expect(outputMismatch(expected, actual) === null).toBe(matches);
  });
});
