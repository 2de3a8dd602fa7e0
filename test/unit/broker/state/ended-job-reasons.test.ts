// What explain says of an ended job, from its counts and events (state/ended-job-reasons.ts).

import { describe, expect, it } from "vitest";
import { type EndedJob, endedJobReasons } from "../../../../src/broker/state/ended-job-reasons.ts";
import type { EventRecord } from "../../../../src/common/model/records.ts";

function event(kind: string, data: Record<string, unknown>, message = kind): EventRecord {
  return { id: 0, jobId: "9", at: 0, kind, data, message };
}

const one = (state: EndedJob["state"]): EndedJob => ({
  state,
  taskCount: 1,
  counts: {
    succeeded: state === "succeeded" ? 1 : 0,
    failed: state === "failed" ? 1 : 0,
    cancelled: state === "cancelled" ? 1 : 0,
  },
});

describe("endedJobReasons", () => {
  it.each<[string, EndedJob, EventRecord[], string[]]>([
    ["a job that succeeded", one("succeeded"), [], ["the job has ended: succeeded"]],
    [
      "an array, its tasks counted",
      { state: "failed", taskCount: 5, counts: { succeeded: 3, failed: 2, cancelled: 0 } },
      [],
      ["the job has ended: failed (5 tasks: 3 succeeded, 2 failed)"],
    ],
    [
      "cancelled because a dependency failed",
      one("cancelled"),
      [event("dependency.unmet", { dependency: "7", when: "succeeded", state: "failed", tasks: null })],
      [
        "the job has ended: cancelled",
        "cancelled because its dependency can never be met: job 7 ended failed (it waited for it to succeed)",
      ],
    ],
    [
      "some tasks cancelled by a tasks: same dependency",
      { state: "cancelled", taskCount: 4, counts: { succeeded: 2, failed: 0, cancelled: 2 } },
      [event("dependency.unmet", { dependency: "7", when: "succeeded", state: "failed", tasks: "1, 3" })],
      [
        "the job has ended: cancelled (4 tasks: 2 succeeded, 2 cancelled)",
        "tasks 1, 3 cancelled because its dependency can never be met: job 7 ended failed (it waited for it to succeed)",
      ],
    ],
    [
      "a dependency removed",
      one("cancelled"),
      [event("dependency.unmet", { dependency: "7", when: "ended", state: null, tasks: null })],
      [
        "the job has ended: cancelled",
        "cancelled because its dependency can never be met: job 7 was removed (it waited for it to end)",
      ],
    ],
    [
      "an earlier version's dependencies event of a failed dependency",
      one("cancelled"),
      [event("dependencies", { dependency: "7", state: "failed" })],
      [
        "the job has ended: cancelled",
        "cancelled because its dependency can never be met: job 7 ended failed",
      ],
    ],
    [
      "a dependency that released it, then a user's cancel",
      one("cancelled"),
      [
        event("dependencies", { dependency: "7", state: "succeeded" }),
        event("cancel", { by: "bob" }, "cancel requested by bob"),
      ],
      ["the job has ended: cancelled", "cancel requested by bob"],
    ],
    [
      "what came before a retry does not count",
      one("succeeded"),
      [
        event("dependency.unmet", { dependency: "7", when: "succeeded", state: "failed", tasks: null }),
        event("retried", { by: "bob", tasks: "0", count: 1, array: false }),
      ],
      ["the job has ended: succeeded"],
    ],
  ])("%s", (_case, job, events, reasons) => {
    expect(endedJobReasons(job, events)).toStrictEqual(reasons);
  });
});
