// Shared folders and working folders: what an absolute folder path may be (a job's workdir, an
// agent's --shared), its normal form, and which folder holds which path, part by part.

import { describe, expect, it } from "vitest";
import {
  absoluteFolderProblem,
  folderHolds,
  MAX_FOLDER_PATH_CHARS,
  normalFolder,
  sharingFolder,
} from "../../../../src/common/model/shared-folders.ts";

describe("absoluteFolderProblem", () => {
  it.each<[string, string | null]>([
    ["/data/run1", null],
    ["/", null],
    ["/data/run1/", null],
    ["/data/./run1", null],
    ["/data/run..1", null],
    ["/data/..hidden", null],
    ["data/run1", "must be an absolute path (starting with /)"],
    ["./run1", "must be an absolute path (starting with /)"],
    ["", "must be an absolute path (starting with /)"],
    ["~/run1", "must be an absolute path (starting with /)"],
    ["/data/../etc", "must not contain .. (name the folder itself)"],
    ["/data/..", "must not contain .. (name the folder itself)"],
    ["/..", "must not contain .. (name the folder itself)"],
    ["/data/run\u00001", "must not contain a NUL byte"],
    [`/${"a".repeat(MAX_FOLDER_PATH_CHARS)}`, `must be at most ${MAX_FOLDER_PATH_CHARS} characters`],
  ])("%j: %s", (path, problem) => {
    expect(absoluteFolderProblem(path)).toBe(problem);
  });

  it("takes a path of the longest length", () => {
    expect(absoluteFolderProblem(`/${"a".repeat(MAX_FOLDER_PATH_CHARS - 1)}`)).toBeNull();
  });
});

describe("normalFolder", () => {
  it.each<[string, string]>([
    ["/data", "/data"],
    ["/data/", "/data"],
    ["/data//run1/./", "/data/run1"],
    ["/", "/"],
    ["//", "/"],
  ])("%s is %s", (path, normal) => {
    expect(normalFolder(path)).toBe(normal);
  });
});

describe("folderHolds", () => {
  it.each<[string, string, boolean]>([
    ["/data", "/data/run1", true],
    ["/data", "/data", true],
    ["/data/", "/data/run1/out", true],
    ["/data", "/data/", true],
    ["/data", "/data//run1", true],
    ["/data", "/data2", false],
    ["/data", "/data2/run1", false],
    ["/data/run1", "/data", false],
    ["/data", "/scratch/data", false],
    ["/", "/anything/at/all", true],
    ["/data/./x", "/data/x/y", true],
  ])("%s holds %s: %s", (folder, path, holds) => {
    expect(folderHolds(folder, path)).toBe(holds);
  });
});

describe("sharingFolder", () => {
  it.each<[string, string[] | undefined, string | undefined]>([
    ["/data/run1", ["/scratch", "/data"], "/data"],
    ["/data/run1", ["/data", "/data/run1"], "/data"],
    ["/data/run1", ["/scratch"], undefined],
    ["/data/run1", [], undefined],
    ["/data/run1", undefined, undefined],
  ])("%s in %j: %s", (workdir, shared, folder) => {
    expect(sharingFolder(workdir, shared)).toBe(folder);
  });
});
