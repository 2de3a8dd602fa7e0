// The two clocks Steward reads. The system's wall clock can be stepped (by hand, by NTP's first
// sync, by a virtual machine resumed after a pause), forward or back, by any amount; the monotonic
// clock (CLOCK_MONOTONIC) is not. So every duration (a lease, a timeout, a back-off, a deadline,
// a rate) is measured with the monotonic clock, and the wall clock is read only for what is a date
// to someone else: a token's expiry, an S3 signature, an HTTP date, a log line
// (docs/guarantees.md, "Clock jumps").

/** Milliseconds of the monotonic clock: for durations within this process, never a date. */
export function monotonicMs(): number {
  return performance.now();
}

/**
 * The time of the broker's records: whole milliseconds since the epoch, as Date.now(), from the
 * wall clock at the process's start on, advanced by the monotonic clock. It reads as a date
 * (stored, shown) and never goes back, and the difference of two readings is a duration that a
 * step of the wall clock does not change; a step shows in it only once the process starts again.
 */
export function steadyNow(): number {
  return Math.floor(performance.timeOrigin + performance.now());
}

/** Both clocks read at one moment: the wall clock's date and the monotonic clock's reading (ms). */
export interface ClockReadings {
  wallMs: number;
  monotonicMs: number;
}

/** Both clocks, read now. */
export function readClocks(): ClockReadings {
  return { wallMs: Date.now(), monotonicMs: performance.now() };
}
