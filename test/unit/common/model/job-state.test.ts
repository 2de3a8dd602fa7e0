import { describe, expect, it } from "vitest";
import {
  countBucket,
  deriveJobState,
  emptyCounts,
  type TaskCounts,
} from "../../../../src/common/model/job-state.ts";
import { JOB_STATES, type JobState } from "../../../../src/common/model/states.ts";

function counts(partial: Partial<TaskCounts>): TaskCounts {
  return { ...emptyCounts(), ...partial };
}

describe("deriveJobState", () => {
  it.each<[string, Partial<TaskCounts>, boolean, boolean, JobState]>([
    // description, counts, held, dependenciesMet, state
    ["all pending", { pending: 3 }, false, true, "pending"],
    ["pending, dependencies not met", { pending: 3 }, false, false, "waiting"],
    ["pending, held", { pending: 3 }, true, true, "held"],
    ["held beats waiting", { pending: 1 }, true, false, "held"],
    ["one running", { pending: 2, running: 1 }, false, true, "running"],
    ["running while held (attempt still stopping)", { running: 1, pending: 1 }, true, true, "running"],
    ["running with unmet dependencies", { running: 1 }, false, false, "running"],
    ["some succeeded, some pending", { succeeded: 2, pending: 1 }, false, true, "pending"],
    ["some failed, some pending", { failed: 1, pending: 1 }, false, true, "pending"],
    ["some failed, some running", { failed: 1, running: 1 }, false, true, "running"],
    ["some ended, rest held", { succeeded: 1, pending: 1 }, true, true, "held"],
    ["all succeeded", { succeeded: 5 }, false, true, "succeeded"],
    ["all succeeded, still marked held", { succeeded: 1 }, true, false, "succeeded"],
    ["one failed among successes", { succeeded: 4, failed: 1 }, false, true, "failed"],
    ["failed beats cancelled", { failed: 1, cancelled: 3 }, false, true, "failed"],
    ["cancelled among successes", { succeeded: 2, cancelled: 1 }, false, true, "cancelled"],
    ["all cancelled", { cancelled: 2 }, true, true, "cancelled"],
    ["single task failed", { failed: 1 }, false, true, "failed"],
  ])("%s -> %s", (_, partial, held, dependenciesMet, state) => {
    expect(deriveJobState({ counts: counts(partial), held, dependenciesMet })).toBe(state);
  });

  it("always answers one of the job states", () => {
    for (const pending of [0, 1])
      for (const running of [0, 1])
        for (const succeeded of [0, 1])
          for (const failed of [0, 1])
            for (const cancelled of [0, 1])
              for (const held of [false, true])
                for (const dependenciesMet of [false, true]) {
                  const state = deriveJobState({
                    counts: { pending, running, succeeded, failed, cancelled },
                    held,
                    dependenciesMet,
                  });
                  expect(JOB_STATES).toContain(state);
                  const ended = pending + running === 0;
                  expect(["succeeded", "failed", "cancelled"].includes(state)).toBe(ended);
                }
  });
});

describe("countBucket", () => {
  it.each<[JobState, keyof TaskCounts]>([
    ["held", "pending"],
    ["waiting", "pending"],
    ["pending", "pending"],
    ["running", "running"],
    ["succeeded", "succeeded"],
    ["failed", "failed"],
    ["cancelled", "cancelled"],
  ])("%s counts as %s", (state, bucket) => {
    expect(countBucket(state)).toBe(bucket);
  });

  it("emptyCounts gives fresh zeroed counts", () => {
    const a = emptyCounts();
    a.pending++;
    expect(emptyCounts()).toEqual({ pending: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 });
  });
});
