// Which hosts' content caches hold which objects, as their agents' heartbeats last said
// (`cacheHeld`, agent/cache/held-summary.ts): by digest, the hosts that hold it and its size, which
// the scheduler's data affinity reads (scheduler/data-affinity.ts) for the few digests of a job,
// never host by host. Soft state (state/soft-state.ts): kept in memory only, forgotten when a
// host's agent detaches, and brought back by the first heartbeat of its next connection (after a
// restart or a failover too: every agent connects anew, and its first heartbeat says it all).

import type { HeldObject } from "../../common/model/host-facts.ts";

export class CacheHolders {
  /** By digest: the hosts whose cache holds it, with its size there. */
  readonly #byDigest = new Map<string, Map<string, number>>();
  /** By host: the digests it holds (what a new summary replaces). */
  readonly #byHost = new Map<string, readonly string[]>();

  /** By digest, the hosts whose cache holds it and its size (digests no host holds are absent). */
  get byDigest(): ReadonlyMap<string, ReadonlyMap<string, number>> {
    return this.#byDigest;
  }

  /** Hosts with a summary that holds something. */
  get hosts(): number {
    return this.#byHost.size;
  }

  /** What `host`'s cache holds now: its summary replaces the one before. */
  set(host: string, held: readonly HeldObject[]): void {
    this.forget(host);
    if (held.length === 0) return;
    const digests: string[] = [];
    for (const { sha256, bytes } of held) {
      let holders = this.#byDigest.get(sha256);
      if (!holders) {
        holders = new Map();
        this.#byDigest.set(sha256, holders);
      }
      if (!holders.has(host)) digests.push(sha256);
      holders.set(host, bytes);
    }
    this.#byHost.set(host, digests);
  }

  /** The host's summary no longer holds (its agent detached, or the host is gone). */
  forget(host: string): void {
    const digests = this.#byHost.get(host);
    if (!digests) return;
    this.#byHost.delete(host);
    for (const sha256 of digests) {
      const holders = this.#byDigest.get(sha256);
      holders?.delete(host);
      if (holders?.size === 0) this.#byDigest.delete(sha256);
    }
  }
}
