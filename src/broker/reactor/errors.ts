// Errors a request can end with; the API maps them to 404, 409, 429 and 400, a standby's to a
// redirect to the leader or 503, the store's unavailability to 503, and a full store's
// (StorageFullError) to 507.

import { StaleTermError } from "../store/store.ts";
import { storeUnavailableReason } from "../store/store-unavailable.ts";

export { StorageFullError } from "../store/storage-full.ts";
export { STORE_RETRY_AFTER_SECONDS, StoreUnavailableError } from "../store/store-unavailable.ts";

export class NotFoundError extends Error {}
/** A limit of the owner's use (the QoS file's quotas): answered 429 with the limit and the use named. */
export class QuotaError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}
export class ConflictError extends Error {}
export class InvalidRequestError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

/** The request needs the leader and this server is not (or no longer) it. */
export class NotLeaderError extends Error {
  readonly leader: string | null;
  constructor(leader: string | null) {
    super(
      leader ? `this server is standby; the leader is ${leader}` : "this server is standby; no leader yet",
    );
    this.leader = leader;
  }
}

/**
 * Whether a request ended because this server does not lead (or no longer does: the store refused
 * its term); nothing of it was committed, and the leader is the one to ask.
 */
export function isNotLeading(error: unknown): boolean {
  return error instanceof NotLeaderError || error instanceof StaleTermError;
}

/**
 * Why a request ended because the store could not be reached or did not answer in time (answered
 * 503, naming the store), or null when it ended for anything else.
 */
export function storeUnavailable(error: unknown): string | null {
  return storeUnavailableReason(error);
}
