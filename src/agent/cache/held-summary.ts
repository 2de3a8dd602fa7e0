// What the agent tells the server its content cache holds (the heartbeat's `cacheHeld`), for the
// scheduler's data affinity (broker/scheduler/data-affinity.ts): the objects' digests with their
// sizes, the most recently used first, at most CACHE_HELD_MAX of them (protocol/messages.ts).
//
// Sent with the first heartbeat of each connection and then only when it changes (which objects,
// or their sizes; not their order alone). Heartbeats have no acknowledgement of their own, and need
// none here: they travel in order on one connection, so what was sent on it has arrived unless the
// connection dropped, and a new connection starts over (a server that restarted or took over holds
// none of it: it keeps the summary in memory only).

import type { HeldObject } from "../../common/model/host-facts.ts";
import type { CachedObject } from "./cache-index.ts";

/**
 * The `max` objects used most recently, the most recent first (ties: the larger first, then by
 * digest, so that the same cache always gives the same summary).
 */
export function heldSummary(objects: Iterable<Readonly<CachedObject>>, max: number): HeldObject[] {
  return [...objects]
    .sort(
      (a, b) =>
        b.lastUsedMs - a.lastUsedMs ||
        b.bytes - a.bytes ||
        (a.sha256 < b.sha256 ? -1 : a.sha256 > b.sha256 ? 1 : 0),
    )
    .slice(0, Math.max(0, max))
    .map((object) => ({ sha256: object.sha256, bytes: object.bytes }));
}

/** Which summary a connection has carried last: the next heartbeat on it carries one only when it differs. */
export class HeldReport {
  #connection: object | null = null;
  #sent: string | null = null;

  /** The summary to put in the next heartbeat on `connection`, or undefined when that connection has it already. */
  next(connection: object, summary: readonly HeldObject[]): HeldObject[] | undefined {
    const key = summaryKey(summary);
    if (connection === this.#connection && key === this.#sent) return undefined;
    this.#connection = connection;
    this.#sent = key;
    return [...summary];
  }
}

/** The same for two summaries of the same objects, whatever their order. */
function summaryKey(summary: readonly HeldObject[]): string {
  return summary
    .map((object) => `${object.sha256}:${object.bytes}`)
    .sort()
    .join(",");
}
