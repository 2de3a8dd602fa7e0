// The checkpoint transfer rate the rescheduler prices a move with: observed on the uploads of
// earlier checkpoints, smoothed so that one slow or fast upload does not swing it. Small objects
// say more about latency than about bandwidth and are not counted.

/** Uploads smaller than this are not counted (bytes). */
export const MIN_OBSERVED_BYTES = 1_048_576;
/** Weight of the newest observation in the moving average. */
export const TRANSFER_RATE_WEIGHT = 0.3;

/** The rate after an upload of `bytes` that took `ms`, given the rate so far (null: none yet). */
export function observedTransferRate(previous: number | null, bytes: number, ms: number): number | null {
  if (bytes < MIN_OBSERVED_BYTES || ms <= 0) return previous;
  const rate = (bytes * 1000) / ms;
  return previous === null ? rate : previous + TRANSFER_RATE_WEIGHT * (rate - previous);
}
