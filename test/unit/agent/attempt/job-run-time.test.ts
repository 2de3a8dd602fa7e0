import { describe, expect, it } from "vitest";
import { JobStart } from "../../../../src/agent/attempt/job-run-time.ts";

const HOUR = 3_600_000;

describe("JobStart.ranMs", () => {
  it.each([
    // A job launched by this agent: the monotonic clock counts, whatever the wall clock did.
    { case: "no step", launched: [1_000_000, 50], now: [1_002_000, 2_050], ran: 2000 },
    {
      case: "wall clock an hour forward",
      launched: [1_000_000, 50],
      now: [1_002_000 + HOUR, 2_050],
      ran: 2000,
    },
    { case: "wall clock an hour back", launched: [1_000_000, 50], now: [1_002_000 - HOUR, 2_050], ran: 2000 },
    { case: "at its launch", launched: [1_000_000, 50], now: [1_000_000, 50], ran: 0 },
  ])("launched here, $case: ran $ran ms", ({ launched, now, ran }) => {
    const start = new JobStart();
    start.launched({ wallMs: launched[0], monotonicMs: launched[1] });
    expect(start.ranMs({ wallMs: now[0], monotonicMs: now[1] })).toBe(ran);
  });

  it.each([
    // A job re-adopted after a restart has only its date: the wall clock counts, never below 0.
    { case: "no step", written: 1_000_000, now: 1_005_000, ran: 5000 },
    { case: "wall clock set back past its start", written: 1_000_000, now: 1_005_000 - HOUR, ran: 0 },
  ])("re-adopted, $case: ran $ran ms", ({ written, now, ran }) => {
    const start = new JobStart();
    start.adopted(written);
    expect(start.ranMs({ wallMs: now, monotonicMs: 123 })).toBe(ran);
  });

  it("the pid file's date read after a launch seen here changes nothing", () => {
    const start = new JobStart();
    start.launched({ wallMs: 1_000_000, monotonicMs: 0 });
    start.adopted(1_000_000 - HOUR);
    expect(start.ranMs({ wallMs: 1_000_000 + HOUR, monotonicMs: 3000 })).toBe(3000);
  });

  it("is null before the job started", () => {
    expect(new JobStart().ranMs({ wallMs: 1, monotonicMs: 1 })).toBeNull();
  });
});
