// `steward status`: the words it prints for each state, in each format, and its exit code.

import { describe, expect, it } from "vitest";
import { STATUS_EXIT, snakemakeStatus, statusReport } from "../../../src/cli/status-format.ts";
import { JOB_STATES, type JobState } from "../../../src/common/model/states.ts";

describe("Snakemake's word for a state", () => {
  it.each<[JobState | null, string]>([
    ["succeeded", "success"],
    ["failed", "failed"],
    ["cancelled", "failed"],
    [null, "failed"],
    ["held", "running"],
    ["waiting", "running"],
    ["pending", "running"],
    ["running", "running"],
  ])("%s is %s", (state, word) => {
    expect(snakemakeStatus(state)).toBe(word);
  });

  it("has a word for every state", () => {
    for (const state of JOB_STATES)
      expect(["success", "failed", "running"]).toContain(snakemakeStatus(state));
  });
});

describe("what steward status prints", () => {
  const states = new Map<string, JobState | null>([
    ["3", "running"],
    ["4", "succeeded"],
    ["5", null],
    ["flow-2", "failed"],
  ]);

  it("ID STATE for each, in the order named; exit 0 when all exist", () => {
    expect(statusReport(["4", "3", "flow-2"], states, "state")).toEqual({
      lines: ["4 succeeded", "3 running", "flow-2 failed"],
      notes: [],
      exitCode: STATUS_EXIT.found,
    });
  });

  it("a job or workflow that does not exist: named on stderr, the others printed, exit 1", () => {
    expect(statusReport(["3", "5", "9", "flow-7"], states, "state")).toEqual({
      lines: ["3 running"],
      notes: ["no job 5", "no job 9", "no workflow flow-7"],
      exitCode: STATUS_EXIT.missing,
    });
    expect(STATUS_EXIT.missing).not.toBe(STATUS_EXIT.unanswered);
  });

  it("snakemake: the word alone for one id", () => {
    expect(statusReport(["4"], states, "snakemake")).toEqual({
      lines: ["success"],
      notes: [],
      exitCode: 0,
    });
  });

  it("snakemake: a missing job is failed, with a note, and exit 0 (Snakemake stops on any other)", () => {
    expect(statusReport(["5"], states, "snakemake")).toEqual({
      lines: ["failed"],
      notes: ["no job 5 (failed for Snakemake)"],
      exitCode: 0,
    });
  });

  it("snakemake: ID WORD for several ids", () => {
    expect(statusReport(["3", "4", "5"], states, "snakemake").lines).toEqual([
      "3 running",
      "4 success",
      "5 failed",
    ]);
  });
});
