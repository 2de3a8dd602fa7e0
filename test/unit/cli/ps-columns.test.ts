// `steward ps --format`: the column names it takes and the cells it shows.

import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_PS_COLUMNS,
  PS_COLUMNS,
  parsePsColumns,
  psHeaders,
  psRows,
} from "../../../src/cli/ps-columns.ts";
import type { JobSummary } from "../../../src/common/api/jobs.ts";

const JOB: JobSummary = {
  id: "12",
  name: "sweep 3",
  owner: "alice",
  state: "running",
  priority: 5,
  qos: "normal",
  createdAt: "2026-05-01T10:00:00.123Z",
  endedAt: null,
  taskCount: 4,
  counts: { pending: 1, running: 2, succeeded: 1, failed: 0, cancelled: 0 },
};

describe("ps --format", () => {
  it("takes column names, comma-separated, in the order given (any case, spaces around ignored)", () => {
    expect(parsePsColumns("id,state,name")).toEqual(["id", "state", "name"]);
    expect(parsePsColumns(" ID , State")).toEqual(["id", "state"]);
  });

  it.each([
    ["id,bogus", "no column bogus: columns are id, name,"],
    ["id,,state", "an empty column name"],
    ["", "an empty column name"],
    ["id,state,id", "column id is named twice"],
    ["constructor", "no column constructor"],
  ])("refuses %j naming why", (value, message) => {
    expect(() => parsePsColumns(value)).toThrow(InvalidArgumentError);
    expect(() => parsePsColumns(value)).toThrow(message);
  });

  it("shows each cell as the table does", () => {
    const all = Object.keys(PS_COLUMNS) as (keyof typeof PS_COLUMNS)[];
    expect(psHeaders(all)).toEqual([
      "ID",
      "NAME",
      "OWNER",
      "STATE",
      "QOS",
      "PRIO",
      "DONE",
      "RUN",
      "FAIL",
      "TASKS",
      "SUBMITTED",
      "ENDED",
    ]);
    expect(psRows([JOB], all)).toEqual([
      ["12", "sweep 3", "alice", "running", "normal", 5, "1/4", 2, 0, 4, "2026-05-01 10:00:00Z", "-"],
    ]);
    expect(psRows([JOB], ["state", "id"])).toEqual([["running", "12"]]);
  });

  it("the default columns are the table's as it always was", () => {
    expect(psHeaders(DEFAULT_PS_COLUMNS)).toEqual([
      "ID",
      "NAME",
      "OWNER",
      "STATE",
      "QOS",
      "PRIO",
      "DONE",
      "RUN",
      "FAIL",
      "SUBMITTED",
    ]);
  });
});
