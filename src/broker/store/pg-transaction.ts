// One transaction on one pooled PostgreSQL connection, for the record store, its migrations and
// the blob store alike.

import type { Pool, PoolClient } from "pg";

/** Runs `work` between `begin` and COMMIT on one connection; ROLLBACK and rethrow on error. */
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
      await client.query("ROLLBACK").catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    }
  } finally {
    client.release(broken);
  }
}
