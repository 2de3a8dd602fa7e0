// The ids a request names at once: GET /api/v1/jobs/states?ids=... and the cancel's body.

import { describe, expect, it } from "vitest";
import {
  cancelJobsBody,
  jobIdsQueryValue,
  MAX_JOB_ID_LENGTH,
  MAX_JOBS_NAMED,
} from "../../../../src/common/api/job-states.ts";

describe("the ids of GET /api/v1/jobs/states", () => {
  it("reads comma-separated ids as a list, in order", () => {
    expect(jobIdsQueryValue.parse("3,4,5")).toEqual(["3", "4", "5"]);
    expect(jobIdsQueryValue.parse("7")).toEqual(["7"]);
  });

  it.each([
    ["", "Too small"],
    ["3,,4", "an empty id"],
    ["3,", "an empty id"],
    [`3,${"1".repeat(MAX_JOB_ID_LENGTH + 1)}`, `an id of more than ${MAX_JOB_ID_LENGTH} characters`],
    [Array.from({ length: MAX_JOBS_NAMED + 1 }, (_, i) => i).join(","), `at most ${MAX_JOBS_NAMED} ids`],
  ])("refuses %j", (value, message) => {
    const parsed = jobIdsQueryValue.safeParse(value);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0].message).toContain(message);
  });

  it("takes as many ids as one request may name", () => {
    const ids = Array.from({ length: MAX_JOBS_NAMED }, (_, i) => String(i + 1));
    expect(jobIdsQueryValue.parse(ids.join(","))).toEqual(ids);
  });
});

describe("the body of POST /api/v1/jobs/cancel", () => {
  it("takes 1 to MAX_JOBS_NAMED ids", () => {
    expect(cancelJobsBody.safeParse({ ids: ["3"] }).success).toBe(true);
    expect(cancelJobsBody.safeParse({ ids: [] }).success).toBe(false);
    expect(cancelJobsBody.safeParse({ ids: [""] }).success).toBe(false);
    const many = Array.from({ length: MAX_JOBS_NAMED + 1 }, (_, i) => String(i));
    expect(cancelJobsBody.safeParse({ ids: many }).success).toBe(false);
    expect(cancelJobsBody.safeParse({ ids: many.slice(1) }).success).toBe(true);
  });
});
