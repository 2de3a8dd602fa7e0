// The batch job ids a broker submitted for each pool, kept in the store (a meta entry per pool) so
// that a broker that restarts, or another broker that takes over the lead, knows them too. Only
// these ids count as the pool's pilots and only these are ever cancelled: a job of the pilots' name
// that the broker did not submit (another account's, or one a job on a pilot submitted as the
// pilots' own account) is ignored.

/** The pools' submitted pilots, as recorded; null when this broker does not lead. */
export interface PilotLedger {
  /** The ids recorded for the pool. */
  ids(pool: string): ReadonlySet<string>;
  /** Records the pool's ids; durable when the promise resolves. */
  record(pool: string, ids: Iterable<string>): Promise<void>;
}

/** Where a pool's ids are kept among the store's meta entries. */
function pilotLedgerKey(pool: string): string {
  return `pool.${pool}.pilots`;
}

/** What a meta entry holds: the ids as a JSON list. A damaged entry counts as empty. */
export function parseLedgerEntry(value: string | undefined): Set<string> {
  if (value === undefined) return new Set();
  try {
    const ids: unknown = JSON.parse(value);
    return new Set(Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : []);
  } catch {
    return new Set();
  }
}

/** A ledger over the leading core's meta entries. */
export function metaLedger(meta: {
  meta(key: string): string | undefined;
  setMeta(key: string, value: string): Promise<void>;
}): PilotLedger {
  return {
    ids: (pool) => parseLedgerEntry(meta.meta(pilotLedgerKey(pool))),
    record: (pool, ids) => meta.setMeta(pilotLedgerKey(pool), JSON.stringify([...ids].sort())),
  };
}
