// Telling "the store cannot be reached now" from every other failure of a store call. A database
// that is stopped, restarting, cut off or stalled fails calls with errors of the network, of the
// driver (its timeouts, pg-bounds.ts) or of the server shutting down; those are the store's
// unavailability, which the broker answers 503 ("store unavailable: ...") and waits out. Any
// other error (a constraint, a bug) is not, and keeps its 500.

import { STORE_ANSWER_MS } from "./pg-bounds.ts";

/** The Retry-After of a 503 for the store: a new leader may serve an election round after it returns. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/** A request needed the store while it could not be reached; `reason` says why, in one line. */
export class StoreUnavailableError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`store unavailable: ${reason}`);
    this.reason = reason;
  }
}

/** Network errors: no connection, or the one there was is gone. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * SQLSTATEs of a server that cannot serve now: its shutdown or restart, no connection slot left,
 * a statement or an idle transaction cancelled by a timeout.
 */
const SQLSTATES = new Set([
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, or shutting down)
  "57P05", // idle_session_timeout
  "57014", // query_canceled (statement_timeout)
  "25P03", // idle_in_transaction_session_timeout
  "53300", // too_many_connections
]);
/** Every SQLSTATE of class 08 (connection exception). */
const SQLSTATE_CLASSES = ["08"];

/** The driver's own messages (pg, pg-pool) for a connection lost, refused or too slow. */
const DRIVER_MESSAGES: readonly { match: RegExp; reason?: string }[] = [
  { match: /^Query read timeout$/, reason: "no answer in time (stalled?)" },
  {
    match: /^timeout exceeded when trying to connect$/,
    reason: `no connection within ${STORE_ANSWER_MS / 1000} s (stalled?)`,
  },
  {
    match: /^Connection terminated due to connection timeout$/,
    reason: `no connection within ${STORE_ANSWER_MS / 1000} s (stalled?)`,
  },
  { match: /^Connection terminated/ },
  { match: /is not queryable$/ },
  { match: /^timeout expired$/, reason: `no connection within ${STORE_ANSWER_MS / 1000} s (stalled?)` },
];

/**
 * Why `error` means the store cannot be reached now, in one line, or null when it means something
 * else. Looks through `cause` and the first error of an AggregateError (a name with several
 * addresses fails as one).
 */
export function storeUnavailableReason(error: unknown): string | null {
  for (let depth = 0, at: unknown = error; depth < 5 && at instanceof Error; depth++) {
    if (at instanceof StoreUnavailableError) return at.reason;
    const code = (at as { code?: unknown }).code;
    if (typeof code === "string") {
      if (NETWORK_CODES.has(code)) return oneLine(at.message) || code;
      if (SQLSTATES.has(code) || SQLSTATE_CLASSES.some((prefix) => code.startsWith(prefix)))
        return `${oneLine(at.message)} (SQLSTATE ${code})`;
    }
    for (const { match, reason } of DRIVER_MESSAGES)
      if (match.test(at.message)) return reason ?? oneLine(at.message);
    at = at instanceof AggregateError && at.errors.length > 0 ? at.errors[0] : at.cause;
  }
  return null;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}
