// The lists of ids a request may name: a longer list goes in requests of MAX_JOBS_NAMED ids.

import { describe, expect, it } from "vitest";
import { batches } from "../../../src/cli/many-jobs.ts";
import { MAX_JOBS_NAMED } from "../../../src/common/api/job-states.ts";

describe("batches", () => {
  it("cuts a list into runs of at most the size, in order", () => {
    expect(batches([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(batches([1, 2], 2)).toEqual([[1, 2]]);
    expect(batches([], 2)).toEqual([]);
  });

  it("by default, as many ids as one request may name", () => {
    const ids = Array.from({ length: MAX_JOBS_NAMED + 1 }, (_, i) => String(i));
    expect(batches(ids).map((run) => run.length)).toEqual([MAX_JOBS_NAMED, 1]);
  });
});
