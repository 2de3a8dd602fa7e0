// How long an attempt's job has run, for its time limit and its measured wall time. In the agent
// that launched it, by the monotonic clock: a step of the wall clock (forward or back, by any
// amount) neither ends the job early nor lets it run on. A job re-adopted after an agent restart
// has only a date to count from (its pid file's), and is measured by the wall clock. Pure but for
// the clocks' default readings: tests pass theirs in.

import { type ClockReadings, readClocks } from "../../common/time/clocks.ts";

/** When the job started, by each clock. */
export class JobStart {
  /** The wall clock's date (ms since the epoch): known again after a restart (the pid file's). */
  wallMs: number | null = null;
  /** The monotonic clock's reading, in the process that launched the job; null for an adopted job. */
  monotonicMs: number | null = null;

  /** The launcher is asked to start the job: both clocks are read. */
  launched(now: ClockReadings = readClocks()): void {
    this.wallMs = now.wallMs;
    this.monotonicMs = now.monotonicMs;
  }

  /** A job re-adopted after an agent restart started at `wallMs` (unless its launch was seen). */
  adopted(wallMs: number): void {
    this.wallMs ??= wallMs;
  }

  /** How long the job has run (ms), never negative; null before it started. */
  ranMs(now: ClockReadings = readClocks()): number | null {
    if (this.wallMs === null) return null;
    const ran = this.monotonicMs === null ? now.wallMs - this.wallMs : now.monotonicMs - this.monotonicMs;
    return Math.max(0, ran);
  }
}
