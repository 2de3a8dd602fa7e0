import { describe, expect, it } from "vitest";
import { Outbox } from "../../../../src/agent/connection/outbox.ts";
import type { EndedEvent, ReportEvent } from "../../../../src/common/protocol/messages.ts";

function started(jobId: string, taskIndex: number, attempt: number): ReportEvent {
  return { kind: "started", jobId, taskIndex, attempt, pid: 1000 + attempt };
}

function ended(
  jobId: string,
  taskIndex: number,
  attempt: number,
  outcome: EndedEvent["outcome"] = "succeeded",
) {
  return {
    kind: "ended",
    jobId,
    taskIndex,
    attempt,
    outcome,
    exitCode: outcome === "succeeded" ? 0 : 1,
    reason: null,
    outputs: [],
  } satisfies EndedEvent;
}

/** "kind job/task#attempt" for each unacknowledged report, oldest first. */
function summary(outbox: Outbox): string[] {
  return outbox
    .all()
    .map((r) =>
      r.event.kind === "leaving"
        ? `${r.seq}:leaving`
        : `${r.seq}:${r.event.kind} ${r.event.jobId}/${r.event.taskIndex}#${r.event.attempt}`,
    );
}

describe("Outbox", () => {
  it("numbers reports from 1 and returns report messages", () => {
    const outbox = new Outbox();
    const first = outbox.add(started("j1", 0, 1));
    const second = outbox.add(ended("j1", 0, 1));
    expect(first).toEqual({ type: "report", seq: 1, event: started("j1", 0, 1) });
    expect(second.seq).toBe(2);
    expect(second.type).toBe("report");
    expect(outbox.size).toBe(2);
  });

  it("keeps reports in the order they were made", () => {
    const outbox = new Outbox();
    outbox.add(started("a", 0, 1));
    outbox.add(started("b", 3, 2));
    outbox.add(ended("a", 0, 1));
    expect(summary(outbox)).toEqual(["1:started a/0#1", "2:started b/3#2", "3:ended a/0#1"]);
  });

  it("ack removes one report and keeps the order of the rest", () => {
    const outbox = new Outbox();
    for (let attempt = 1; attempt <= 4; attempt++) outbox.add(started("j", 0, attempt));
    outbox.ack(2);
    expect(summary(outbox)).toEqual(["1:started j/0#1", "3:started j/0#3", "4:started j/0#4"]);
    expect(outbox.size).toBe(3);
  });

  it("ack of an unknown or repeated seq changes nothing", () => {
    const outbox = new Outbox();
    outbox.add(started("j", 0, 1));
    outbox.add(started("j", 0, 2));
    outbox.ack(1);
    outbox.ack(1);
    outbox.ack(99);
    expect(summary(outbox)).toEqual(["2:started j/0#2"]);
  });

  it("does not reuse sequence numbers after acks", () => {
    const outbox = new Outbox();
    outbox.add(started("j", 0, 1));
    outbox.ack(1);
    expect(outbox.size).toBe(0);
    expect(outbox.add(started("j", 0, 2)).seq).toBe(2);
    expect(summary(outbox)).toEqual(["2:started j/0#2"]);
  });

  it("all() is a copy: changing it does not change the outbox", () => {
    const outbox = new Outbox();
    outbox.add(started("j", 0, 1));
    outbox.all().pop();
    expect(outbox.size).toBe(1);
  });

  it("dropAttempt forgets every report of that attempt only", () => {
    const outbox = new Outbox();
    outbox.add(started("j", 0, 1)); // 1
    outbox.add(started("j", 1, 1)); // 2: other task
    outbox.add(ended("j", 0, 1)); // 3
    outbox.add(started("j", 0, 2)); // 4: other attempt
    outbox.add(started("k", 0, 1)); // 5: other job
    outbox.dropAttempt("j", 0, 1);
    expect(summary(outbox)).toEqual(["2:started j/1#1", "4:started j/0#2", "5:started k/0#1"]);
  });

  it("dropAttempt of an unknown attempt changes nothing", () => {
    const outbox = new Outbox();
    outbox.add(started("j", 0, 1));
    outbox.dropAttempt("j", 0, 2);
    outbox.dropAttempt("x", 0, 1);
    expect(summary(outbox)).toEqual(["1:started j/0#1"]);
  });
});
