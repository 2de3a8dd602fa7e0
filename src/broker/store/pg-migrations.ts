// How the PostgreSQL store runs its migrations (migrate.ts): one transaction under an advisory lock.

import { escapeIdentifier, type Pool } from "pg";
import type { MigrationDialect } from "./migrate.ts";
import { inTransaction } from "./pg-transaction.ts";

/** Two-key advisory lock: this class ("Stew") and a hash of the schema, so one migrator per schema. */
const MIGRATION_LOCK_CLASS = 0x53746577;

/**
 * The migration runner's view of PostgreSQL: one transaction under an advisory lock, so a second
 * server starting at the same moment waits, then finds the migrations applied.
 */
export function migrationDialect(pool: Pool, schema: string | null): MigrationDialect {
  return {
    async exclusive(work) {
      await inTransaction(pool, "BEGIN", async (client) => {
        await client.query(
          "SELECT pg_advisory_xact_lock($1, hashtext(coalesce($2::text, current_schema()::text, '')))",
          [MIGRATION_LOCK_CLASS, schema],
        );
        // Looked up rather than CREATE SCHEMA IF NOT EXISTS, which needs the CREATE privilege even
        // when the schema is there: a schema made beforehand by an administrator is enough.
        if (schema !== null) {
          const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
          if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${escapeIdentifier(schema)}`);
        }
        await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
          version integer PRIMARY KEY,
          name text NOT NULL,
          applied_at bigint NOT NULL
        )`);
        await work({
          exec: async (sql) => {
            await client.query(sql);
          },
          appliedVersions: async () =>
            (await client.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map(
              (row) => Number(row.version),
            ),
          record: async (migration, at) => {
            await client.query(
              "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
              [migration.version, migration.name, at],
            );
          },
        });
      });
    },
  };
}
