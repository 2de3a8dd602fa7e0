// Runs the Store conformance suite against SQLite (a file in a temporary folder, and in memory),
// then the few things only SQLite has: its pragmas and its migration bookkeeping.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { readMigrations, SqliteStore } from "../../src/store/sqlite.ts";
import { describeStoreConformance, job } from "./store-suite.ts";

describeStoreConformance("sqlite file", async () => {
  const dir = await mkdtemp(join(tmpdir(), "steward-store-"));
  const path = join(dir, "steward.db");
  return {
    store: new SqliteStore(path),
    reopen: async () => new SqliteStore(path),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

describeStoreConformance("sqlite :memory:", async () => ({
  store: new SqliteStore(":memory:"),
  cleanup: async () => {},
}));

describe("SqliteStore specifics", () => {
  let dir: string;
  let path: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-sqlite-"));
    path = join(dir, "steward.db");
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function inspect<T>(read: (db: DatabaseSync) => T): T {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  }

  test("uses WAL, and records each migration once across reopens", async () => {
    const expected = (await readMigrations()).map((m) => ({ version: m.version, name: m.name }));
    expect(expected[0]).toStrictEqual({ version: 1, name: "001_init.sql" });
    for (let i = 0; i < 2; i++) {
      const store = new SqliteStore(path);
      await store.open();
      await store.close();
    }
    inspect((db) => {
      expect(db.prepare("PRAGMA journal_mode").get()).toMatchObject({ journal_mode: "wal" });
      const rows = db.prepare("SELECT version, name FROM schema_migrations ORDER BY version").all();
      expect(rows.map((row) => ({ ...row }))).toStrictEqual(expected);
    });
  });

  test("refuses a database from a newer Steward", async () => {
    const store = new SqliteStore(path);
    await store.open();
    await store.close();
    const db = new DatabaseSync(path);
    db.prepare(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '999_future.sql', 0)",
    ).run();
    db.close();
    await expect(new SqliteStore(path).open()).rejects.toThrow(/schema version 999/);
  });

  test("migration files must be numbered without gaps", async () => {
    await writeFile(join(dir, "001_a.sql"), "SELECT 1;");
    await writeFile(join(dir, "003_c.sql"), "SELECT 1;");
    await writeFile(join(dir, "notes.txt"), "ignored");
    await expect(readMigrations(dir)).rejects.toThrow(/expected version 2/);
  });

  test("calls before open, and after close, throw", async () => {
    const store = new SqliteStore(path);
    await expect(store.load()).rejects.toThrow(/not open/);
    await store.open();
    await store.commit([{ op: "putJob", job: job("j") }]);
    await store.close();
    await store.close();
    await expect(store.commit([{ op: "putJob", job: job("k") }])).rejects.toThrow(/not open/);
  });

  test("two stores on one file see each other's commits", async () => {
    const a = new SqliteStore(path);
    const b = new SqliteStore(path);
    await a.open();
    await b.open();
    try {
      await a.commit([{ op: "putJob", job: job("from-a") }]);
      await b.commit([{ op: "putJob", job: job("from-b", { createdAt: 1_800_000_000_000 }) }]);
      expect((await a.load()).jobs.map((j) => j.id)).toStrictEqual(["from-a", "from-b"]);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
