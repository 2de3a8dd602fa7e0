// How long a try may take to send its body, beside the time the server has to answer. A body is
// allowed its size at UPLOAD_MIN_BYTES_PER_SECOND; a link slower than that (a throttled or narrow
// one) would cut every try of a large enough body at the same point, and an upload tried again
// without end (an agent's output waits out the server however long) would never go. So each try
// that timed out with a body halves the rate the next one is allowed, down to a floor: the slow
// link is found out in a few tries, which cost about as much again as the one that goes through.

/** The rate a body is allowed on its first try: a body of known size adds its size at it. */
export const UPLOAD_MIN_BYTES_PER_SECOND = 1024 * 1024;

/** The rate is halved at most this many times (1 MiB/s down to 16 KiB/s). */
export const UPLOAD_RATE_HALVINGS = 6;

/**
 * Milliseconds a try is allowed to send `bytes`, after `slowTries` tries of the same request that
 * timed out while sending a body.
 */
export function uploadAllowanceMs(bytes: number, slowTries: number): number {
  const rate = UPLOAD_MIN_BYTES_PER_SECOND / 2 ** Math.min(Math.max(0, slowTries), UPLOAD_RATE_HALVINGS);
  return Math.ceil((bytes / rate) * 1000);
}
