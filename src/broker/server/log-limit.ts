// The size limit of an attempt's log (`--max-log-mb`): a job printing without end must not fill
// the broker's disk. The bytes up to the limit are kept, then one marker line, and the rest is
// dropped; the job goes on. The agent is told the limit in its welcome and stops sending past it;
// one that was not told (an older agent) has its bytes past the limit taken and dropped, so that
// it moves on as usual.

/** The default of `--max-log-mb`. */
export const DEFAULT_MAX_LOG_MB = 1024;

/** What follows the bytes kept: the same every time, so that writing it again changes nothing. */
export function truncationMarker(maxLogMb: number): Buffer {
  return Buffer.from(`\n[steward: log truncated at ${maxLogMb} MB (--max-log-mb); the rest was dropped]\n`);
}

/**
 * Of `length` bytes sent at `offset`, how many are kept under a limit of `maxBytes`, and whether
 * they reach past it (the marker then follows at `maxBytes`).
 */
export function keptUnderLimit(
  offset: number,
  length: number,
  maxBytes: number,
): { kept: number; past: boolean } {
  return { kept: Math.max(0, Math.min(length, maxBytes - offset)), past: offset + length > maxBytes };
}
