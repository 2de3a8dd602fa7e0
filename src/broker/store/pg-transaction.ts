// One transaction on one pooled PostgreSQL connection, for the record store, its migrations and
// the blob store alike.

import type { Pool, PoolClient } from "pg";
import { storeUnavailableReason } from "./store-unavailable.ts";

/**
 * Runs `work` between `begin` and COMMIT on one connection; ROLLBACK and rethrow on error. A
 * connection that failed for the database's unavailability (lost, or stalled past its bound) gets
 * no ROLLBACK, which would wait as long again: it is destroyed, and the database rolls back.
 */
export async function inTransaction<T>(
  pool: Pool,
  begin: string,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  // A connection whose ROLLBACK failed is in an unknown state: it is destroyed, not pooled again.
  let broken: Error | undefined;
  try {
    await client.query(begin);
    try {
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      if (storeUnavailableReason(error) !== null) broken = error as Error;
      else
        await client.query("ROLLBACK").catch((rollbackError: Error) => {
          broken = rollbackError;
        });
      throw error;
    }
  } catch (error) {
    // BEGIN or COMMIT itself: the connection's state is unknown.
    if (broken === undefined && storeUnavailableReason(error) !== null) broken = error as Error;
    throw error;
  } finally {
    client.release(broken);
  }
}
