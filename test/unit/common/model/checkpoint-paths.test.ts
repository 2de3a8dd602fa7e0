// The paths of a checkpoint manifest (the agent writes each one, as root, into a new attempt's
// checkpoint folder): the rules of one path at their limits, and those of a manifest's paths
// together (each once, none both a file and the folder of another), each issue naming its path.

import { describe, expect, it } from "vitest";
import {
  CHECKPOINT_NAME_MAX_BYTES,
  CHECKPOINT_PATH_MAX_BYTES,
  type CheckpointPathIssue,
  checkpointPathIssues,
  checkpointPathProblem,
} from "../../../../src/common/model/checkpoint-paths.ts";

/** A path of `count` names of `length` bytes each, joined by `/`. */
function pathOf(count: number, length: number): string {
  return Array.from({ length: count }, () => "n".repeat(length)).join("/");
}

describe("checkpointPathProblem", () => {
  it("takes the limits of Linux: a name of 255 bytes, a path of 4095", () => {
    expect([CHECKPOINT_NAME_MAX_BYTES, CHECKPOINT_PATH_MAX_BYTES]).toEqual([255, 4095]);
  });

  it.each<[string, string, string | null]>([
    ["a file in the folder: fine", "state.bin", null],
    ["a file in a sub-folder: fine", "rank-0/state.bin", null],
    ["a name starting with dots stays in the folder: fine", "..state/x", null],
    ["the rules of relative paths first: empty", "", "must not be empty"],
    ["the rules of relative paths first: absolute", "/etc/passwd", "must be a relative path"],
    ["the rules of relative paths first: climbing out", "../../etc/cron.d/x", "leaves its folder"],
    ["the rules of relative paths first: the folder itself", ".", "must name a file"],
    [
      "normal form: no `.` component",
      "./state.bin",
      "is not in normal form (a `.`, an empty or a trailing component)",
    ],
    [
      "normal form: no `.` component inside",
      "a/./b",
      "is not in normal form (a `.`, an empty or a trailing component)",
    ],
    [
      "normal form: no empty component",
      "a//b",
      "is not in normal form (a `.`, an empty or a trailing component)",
    ],
    [
      "normal form: no `..` that stays inside",
      "a/../b",
      "is not in normal form (a `.`, an empty or a trailing component)",
    ],
    ["normal form: no trailing `/`", "a/", "is not in normal form (a `.`, an empty or a trailing component)"],
    [
      "normal form: no trailing `/` after a folder",
      "a/b/",
      "is not in normal form (a `.`, an empty or a trailing component)",
    ],
    ["a name of exactly 255 bytes: fine", pathOf(1, 255), null],
    ["a name of 256 bytes: too long", pathOf(1, 256), "has a name longer than 255 bytes"],
    ["a long name counts in bytes, not characters", "é".repeat(128), "has a name longer than 255 bytes"],
    ["a name too long after the first", `a/${pathOf(1, 256)}`, "has a name longer than 255 bytes"],
    // 16 names of 255 bytes and 15 slashes: 4095 bytes.
    ["a path of exactly 4095 bytes: fine", pathOf(16, 255), null],
    // 15 names of 255 bytes, then two of 128 and 127: 4096 bytes.
    [
      "a path of 4096 bytes: too long",
      `${pathOf(15, 255)}/${pathOf(1, 128)}/${pathOf(1, 127)}`,
      "is longer than 4095 bytes",
    ],
    [
      "a long path counts in bytes, not characters",
      `${pathOf(15, 255)}/${"é".repeat(64)}/${"é".repeat(63)}n`,
      "is longer than 4095 bytes",
    ],
  ])("%s", (_, path, problem) => {
    expect(checkpointPathProblem(path)).toBe(problem);
  });
});

describe("checkpointPathIssues", () => {
  it.each<[string, string[], CheckpointPathIssue[]]>([
    ["no paths: nothing wrong", [], []],
    ["files side by side and in folders: nothing wrong", ["a", "b/c", "b/d", "e/f/g", "e/h"], []],
    ["a folder's name as the start of a file's: nothing wrong", ["ab", "a/b", "a/bc"], []],
    [
      "a bad path is named with its problem and index, and the others still checked",
      ["ok", "../x", "ok"],
      [
        { index: 1, message: '"../x" leaves its folder' },
        { index: 2, message: '"ok" is named twice' },
      ],
    ],
    ["a path named twice: the second", ["a", "b", "a"], [{ index: 2, message: '"a" is named twice' }]],
    [
      "a file, then a file under it as a folder",
      ["a", "a/b"],
      [{ index: 1, message: '"a/b" clashes with "a": a file and a folder' }],
    ],
    [
      "a file, then a file two folders under it",
      ["a/b", "a/b/c/d"],
      [{ index: 1, message: '"a/b/c/d" clashes with "a/b": a file and a folder' }],
    ],
    [
      "a folder, then a file of its name",
      ["a/b/c", "a/b"],
      [{ index: 1, message: '"a/b" clashes with "a/b": a file and a folder' }],
    ],
    [
      "a folder, then a file of the name of the folder above it",
      ["a/b/c", "a"],
      [{ index: 1, message: '"a" clashes with "a": a file and a folder' }],
    ],
    [
      "a refused path adds no folder: a file of its folder's name is fine",
      ["a/../b", "a"],
      [{ index: 0, message: '"a/../b" is not in normal form (a `.`, an empty or a trailing component)' }],
    ],
    [
      "a clashing path adds no folder: a file of its name afterwards is fine",
      ["a", "a/b", "x", "a/b/c"],
      [
        { index: 1, message: '"a/b" clashes with "a": a file and a folder' },
        { index: 3, message: '"a/b/c" clashes with "a": a file and a folder' },
      ],
    ],
    [
      "a path named twice adds nothing new: a later clash names the first file",
      ["a/b", "a/b", "a/b/c"],
      [
        { index: 1, message: '"a/b" is named twice' },
        { index: 2, message: '"a/b/c" clashes with "a/b": a file and a folder' },
      ],
    ],
  ])("%s", (_, paths, issues) => {
    expect(checkpointPathIssues(paths)).toEqual(issues);
  });
});
