// A submit's answer takes its new job's events from the reactor's reports of committed events
// (reactor/committed-events.ts): only the watched job's, those committed while it is watched, in
// the order the store reads them (at, then id).

import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { CommittedEventsOfJobs } from "../../../../src/broker/reactor/committed-events.ts";
import type { EventRecord } from "../../../../src/common/model/records.ts";

function event(jobId: string, id: number, at: number): EventRecord {
  return { id, jobId, at, kind: "submitted", data: { owner: "alice", tasks: 1 }, message: `event ${id}` };
}

describe("the committed events of jobs being submitted", () => {
  it("gathers the watched job's events committed while it is watched, oldest first by at then id", () => {
    const reported = new EventEmitter<{ event: [EventRecord] }>();
    const events = new CommittedEventsOfJobs((listener) => reported.on("event", listener));
    reported.emit("event", event("7", 1, 100));
    events.watch("7");
    reported.emit("event", event("8", 2, 100));
    reported.emit("event", event("7", 4, 200));
    reported.emit("event", event("7", 3, 200));
    reported.emit("event", event("7", 5, 150));
    expect(events.take("7").map((each) => each.id)).toStrictEqual([5, 3, 4]);
    // Once taken, the job is no longer watched.
    reported.emit("event", event("7", 6, 300));
    expect(events.take("7")).toStrictEqual([]);
    expect(reported.listenerCount("event")).toBe(1);
  });
});
