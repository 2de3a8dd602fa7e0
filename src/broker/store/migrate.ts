// The one schema migration runner. Each database has its own numbered SQL files
// (migrations/sqlite, migrations/postgres); the rules are the same for both and live here: apply
// the versions not yet recorded in schema_migrations, in order, all in one exclusive transaction (a
// second server opening the database at the same moment waits, then finds them applied), and refuse
// a database that a newer Steward has migrated further than this one knows.

import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

export const MIGRATIONS_DIR = join(import.meta.dirname, "migrations");

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The numbered files of a migrations folder ("001_init.sql"), in order; gaps and duplicates are errors. */
export async function readMigrations(dir: string): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for (const file of await readdir(dir)) {
    const match = /^(\d+)_[\w-]+\.sql$/.exec(file);
    if (!match) continue;
    migrations.push({ version: Number(match[1]), name: file, sql: await readFile(join(dir, file), "utf8") });
  }
  migrations.sort((a, b) => a.version - b.version);
  migrations.forEach((migration, i) => {
    if (migration.version !== i + 1) {
      throw new Error(`migrations in ${dir}: expected version ${i + 1}, found ${migration.name}`);
    }
  });
  return migrations;
}

/** What the runner needs of a database, inside the exclusive transaction. */
export interface MigrationConnection {
  /** Runs SQL that may hold several statements. */
  exec(sql: string): Promise<void>;
  /** The versions recorded in schema_migrations. */
  appliedVersions(): Promise<number[]>;
  record(migration: Migration, at: number): Promise<void>;
}

export interface MigrationDialect {
  /**
   * Runs `work` in one transaction that no other migrator runs beside (SQLite: BEGIN IMMEDIATE;
   * PostgreSQL: an advisory transaction lock), after making schema_migrations if it is missing;
   * commits if `work` resolves, rolls back if it throws.
   */
  exclusive(work: (connection: MigrationConnection) => Promise<void>): Promise<void>;
}

export async function migrate(dialect: MigrationDialect, migrations: readonly Migration[]): Promise<void> {
  await dialect.exclusive(async (connection) => {
    const applied = new Set(await connection.appliedVersions());
    const newest = Math.max(0, ...applied);
    if (newest > migrations.length) {
      throw new Error(
        `the database is at schema version ${newest}, newer than this Steward knows (${migrations.length})`,
      );
    }
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      try {
        await connection.exec(migration.sql);
      } catch (error) {
        throw new Error(`schema migration ${migration.name} failed: ${(error as Error).message}`, {
          cause: error,
        });
      }
      await connection.record(migration, Date.now());
    }
  });
}
