// Runs the Store conformance suite against SQLite (a file in a temporary folder, and in memory) and
// against the PostgreSQL server of STEWARD_TEST_PG_URL (a fresh schema per test), then the few
// things only each one has: SQLite's pragmas, PostgreSQL's schemas and locked migrations, and the
// migration bookkeeping of both.

import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { readMigrations } from "../../src/broker/store/migrate.ts";
import { POSTGRES_MIGRATIONS_DIR, PostgresStore } from "../../src/broker/store/postgres.ts";
import { TABLES } from "../../src/broker/store/schema.ts";
import { SqliteStore } from "../../src/broker/store/sqlite.ts";
import { SQLITE_MIGRATIONS_DIR } from "../../src/broker/store/sqlite-statements.ts";
import { StaleTermError } from "../../src/broker/store/store.ts";
import { describeStoreConformance, event, job, TERM, task } from "./store-suite.ts";

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
    const expected = (await readMigrations(SQLITE_MIGRATIONS_DIR)).map((m) => ({
      version: m.version,
      name: m.name,
    }));
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
    await store.commit(TERM, [{ op: "putJob", job: job("j") }]);
    await store.close();
    await store.close();
    await expect(store.commit(TERM, [{ op: "putJob", job: job("k") }])).rejects.toThrow(/not open/);
  });

  test("two stores on one file see each other's commits", async () => {
    const a = new SqliteStore(path);
    const b = new SqliteStore(path);
    await a.open();
    await b.open();
    try {
      await a.commit(TERM, [{ op: "putJob", job: job("from-a") }]);
      await b.commit(TERM, [{ op: "putJob", job: job("from-b", { createdAt: 1_800_000_000_000 }) }]);
      expect((await a.load()).jobs.map((j) => j.id)).toStrictEqual(["from-a", "from-b"]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("two stores on one file: the one with the older term can no longer commit", async () => {
    const a = new SqliteStore(path);
    const b = new SqliteStore(path);
    await a.open();
    await b.open();
    try {
      const termA = await a.beginTerm();
      await a.commit(termA, [{ op: "putJob", job: job("from-a") }]);
      const termB = await b.beginTerm();
      expect(termB).toBe(termA + 1);
      await expect(a.commit(termA, [{ op: "putJob", job: job("late") }])).rejects.toBeInstanceOf(
        StaleTermError,
      );
      await expect(a.reserveIds(termA, "job", 1)).rejects.toBeInstanceOf(StaleTermError);
      await b.commit(termB, [{ op: "putJob", job: job("from-b", { createdAt: 1_800_000_000_000 }) }]);
      expect((await a.load()).jobs.map((j) => j.id)).toStrictEqual(["from-a", "from-b"]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("the migrated tables have the columns of src/broker/store/schema.ts", async () => {
    const store = new SqliteStore(path);
    await store.open();
    await store.close();
    inspect((db) => {
      for (const table of TABLES) {
        const columns = db.prepare(`PRAGMA table_info(${table.name})`).all();
        const declared = [...table.generated, ...table.columns].map((c) => ({
          name: c.name,
          // SQLite's INTEGER PRIMARY KEY is the rowid: never null, though table_info says notnull 0.
          nullable: c.nullable || table.generated.includes(c),
        }));
        expect(columns.map((c) => String(c.name)).sort(), table.name).toStrictEqual(
          declared.map((c) => c.name).sort(),
        );
        for (const column of declared.filter((c) => !table.generated.some((g) => g.name === c.name))) {
          const found = columns.find((c) => c.name === column.name);
          expect(found?.notnull === 0, `${table.name}.${column.name} nullable`).toBe(column.nullable);
        }
      }
    });
  });

  test("a database of schema version 1 is migrated: placements backfilled, job ids go on above the old ones", async () => {
    // A database as the first schema left it.
    const db = new DatabaseSync(path);
    db.exec(
      `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY NOT NULL, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
    );
    const [first] = await readMigrations(SQLITE_MIGRATIONS_DIR);
    db.exec(first.sql);
    db.prepare("INSERT INTO schema_migrations VALUES (1, '001_init.sql', 0)").run();
    db.exec(
      `INSERT INTO jobs VALUES ('41', 'old', 'alice', 'running', 0, 0, 0, 1, NULL, '{"command":"true"}', '[]')`,
    );
    db.exec(
      `INSERT INTO jobs VALUES ('other', 'named', 'alice', 'running', 0, 0, 0, 2, NULL, '{"command":"true"}', '[]')`,
    );
    db.exec("INSERT INTO tasks VALUES ('41', 0, 'running', 1, 0, 0, NULL, NULL, NULL)");
    db.exec("INSERT INTO attempts VALUES ('41', 0, 1, 'node-7', 'running', NULL, NULL, NULL, 0, 5, NULL)");
    db.exec("INSERT INTO events (job_id, at, kind, message) VALUES ('41', 3, 'state', 'submitted')");
    db.exec("INSERT INTO meta VALUES ('nextJobId', '40')");
    db.close();

    const store = new SqliteStore(path);
    await store.open();
    try {
      const snapshot = await store.load();
      expect(snapshot.tasks[0]).toMatchObject({ systemFailures: 0, migration: null });
      expect(snapshot.attempts[0]).toMatchObject({
        host: "node-7",
        placement: [{ host: "node-7", rank: 0 }],
        stop: null,
      });
      expect(await store.events("41")).toMatchObject([{ id: 1, data: {}, message: "submitted" }]);
      expect(await store.currentTerm()).toBe(0);
      expect(await store.reserveIds(await store.beginTerm(), "job", 32)).toBe(42);
    } finally {
      await store.close();
    }
  });
});

// --- PostgreSQL ---------------------------------------------------------------------------------

const PG_URL = process.env.STEWARD_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Runs statements on a connection of its own, outside any store (set-up, inspection, clean-up). */
async function onPostgres<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Null when the server answers, otherwise why not. */
async function postgresUnreachable(): Promise<string | null> {
  try {
    await onPostgres((client) => client.query("SELECT 1"));
    return null;
  } catch (error) {
    return (error as Error).message || String(error);
  }
}

function freshSchema(): string {
  return `steward_test_${randomBytes(6).toString("hex")}`;
}

async function dropSchema(schema: string): Promise<void> {
  await onPostgres((client) => client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`));
}

const unreachable = await postgresUnreachable();
const safeUrl = PG_URL.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");

if (unreachable && process.env.CI) {
  // CI promises a PostgreSQL server (.ci/run starts one): a missing one is a failure, not a skip.
  test(`PostgreSQL at ${safeUrl} is reachable`, () => {
    throw new Error(`cannot reach PostgreSQL at ${safeUrl} (STEWARD_TEST_PG_URL): ${unreachable}`);
  });
} else if (unreachable) {
  console.warn(
    `skipping the PostgreSQL store tests: cannot reach ${safeUrl} (set STEWARD_TEST_PG_URL): ${unreachable}`,
  );
  test.skip(`PostgreSQL store: no server at ${safeUrl} (set STEWARD_TEST_PG_URL)`, () => {});
} else {
  describeStoreConformance("postgres", async () => {
    const schema = freshSchema();
    return {
      store: new PostgresStore(PG_URL, { schema }),
      reopen: async () => new PostgresStore(PG_URL, { schema }),
      cleanup: () => dropSchema(schema),
    };
  });

  describe("PostgresStore specifics", () => {
    let schema: string;
    let stores: PostgresStore[];

    beforeEach(() => {
      schema = freshSchema();
      stores = [];
    });

    afterEach(async () => {
      for (const store of stores) await store.close();
      await dropSchema(schema);
    });

    function makeStore(url = PG_URL, options: { schema?: string } = { schema }): PostgresStore {
      const store = new PostgresStore(url, options);
      stores.push(store);
      return store;
    }

    async function applied(): Promise<{ version: number; name: string }[]> {
      return onPostgres(async (client) => {
        const result = await client.query(
          `SELECT version, name FROM ${pg.escapeIdentifier(schema)}.schema_migrations ORDER BY version`,
        );
        return result.rows.map((row) => ({ version: Number(row.version), name: String(row.name) }));
      });
    }

    async function expected(): Promise<{ version: number; name: string }[]> {
      return (await readMigrations(POSTGRES_MIGRATIONS_DIR)).map((m) => ({
        version: m.version,
        name: m.name,
      }));
    }

    test("creates its schema, and records each migration once across reopens", async () => {
      expect((await expected())[0]).toStrictEqual({ version: 1, name: "001_init.sql" });
      for (let i = 0; i < 3; i++) {
        const store = makeStore();
        await store.open();
        await store.close();
      }
      expect(await applied()).toStrictEqual(await expected());
    });

    test("two stores opening one fresh schema at once apply the migrations once", async () => {
      const racing = Array.from({ length: 4 }, () => makeStore());
      await Promise.all(racing.map((store) => store.open()));
      expect(await applied()).toStrictEqual(await expected());
      await racing[0].commit(TERM, [{ op: "putJob", job: job("from-0") }]);
      await racing[3].commit(TERM, [{ op: "putJob", job: job("from-3", { createdAt: 1_800_000_000_000 }) }]);
      for (const store of racing) {
        expect((await store.load()).jobs.map((j) => j.id)).toStrictEqual(["from-0", "from-3"]);
      }
    });

    test("uses a schema made beforehand by someone else", async () => {
      await onPostgres((client) => client.query(`CREATE SCHEMA ${pg.escapeIdentifier(schema)}`));
      const store = makeStore();
      await store.open();
      await store.commit(TERM, [{ op: "putJob", job: job("j") }]);
      expect((await store.load()).jobs).toStrictEqual([job("j")]);
    });

    test("the URL's schema parameter names the schema; the option wins over it", async () => {
      const url = new URL(PG_URL);
      url.searchParams.set("schema", schema);
      const fromUrl = makeStore(url.toString(), {});
      expect(fromUrl.schema).toBe(schema);
      await fromUrl.open();
      await fromUrl.commit(TERM, [{ op: "putJob", job: job("via-url") }]);
      expect(await applied()).toStrictEqual(await expected());

      const other = freshSchema();
      try {
        const overridden = makeStore(url.toString(), { schema: other });
        await overridden.open();
        expect((await overridden.load()).jobs).toStrictEqual([]);
        await overridden.close();
      } finally {
        await dropSchema(other);
      }
      expect((await fromUrl.load()).jobs).toStrictEqual([job("via-url")]);
    });

    test("keeps its tables out of other schemas", async () => {
      const store = makeStore();
      await store.open();
      const tables = await onPostgres(async (client) => {
        const result = await client.query(
          "SELECT table_schema, table_name FROM information_schema.tables WHERE table_name = 'jobs' AND table_schema = ANY($1)",
          [[schema, "public"]],
        );
        return result.rows.map((row) => String(row.table_schema));
      });
      expect(tables).toStrictEqual([schema]);
    });

    test('ids and names compare by bytes (COLLATE "C"), whatever the database\'s locale', async () => {
      const store = makeStore();
      await store.open();
      const keys = ["jobs.id", "tasks.job_id", "attempts.job_id", "events.job_id", "hosts.name", "meta.key"];
      const collations = await onPostgres(async (client) => {
        const result = await client.query(
          `SELECT table_name || '.' || column_name AS key, collation_name FROM information_schema.columns
           WHERE table_schema = $1 AND table_name || '.' || column_name = ANY($2)`,
          [schema, keys],
        );
        return Object.fromEntries(result.rows.map((row) => [row.key, row.collation_name]));
      });
      expect(collations).toStrictEqual(Object.fromEntries(keys.map((key) => [key, "C"])));
    });

    test("refuses a database from a newer Steward", async () => {
      const store = makeStore();
      await store.open();
      await store.close();
      await onPostgres((client) =>
        client.query(
          `INSERT INTO ${pg.escapeIdentifier(schema)}.schema_migrations (version, name, applied_at) VALUES (999, '999_future.sql', 0)`,
        ),
      );
      await expect(makeStore().open()).rejects.toThrow(/schema version 999/);
    });

    test("calls before open, and after close, throw; close twice is fine", async () => {
      const store = makeStore();
      await expect(store.load()).rejects.toThrow(/not open/);
      await expect(store.commit(TERM, [])).rejects.toThrow(/not open/);
      await store.open();
      await store.commit(TERM, [{ op: "putJob", job: job("j") }]);
      await store.close();
      await store.close();
      await expect(store.commit(TERM, [{ op: "putJob", job: job("k") }])).rejects.toThrow(/not open/);
      await expect(store.events("j")).rejects.toThrow(/not open/);
    });

    test("an unreachable server fails open with the connection error", async () => {
      const store = makeStore("postgres://postgres@127.0.0.1:1/test?connect_timeout=2");
      await expect(store.open()).rejects.toThrow();
      await expect(store.load()).rejects.toThrow(/not open/);
    });

    test("two stores on one schema: the older term is refused, even when it commits at the same moment", async () => {
      const a = makeStore();
      const b = makeStore();
      await Promise.all([a.open(), b.open()]);
      const termA = await a.beginTerm();
      await a.commit(termA, [{ op: "putJob", job: job("from-a") }]);
      const termB = await b.beginTerm();
      const results = await Promise.allSettled([
        ...Array.from({ length: 10 }, (_, i) => a.commit(termA, [{ op: "putJob", job: job(`late-${i}`) }])),
        ...Array.from({ length: 10 }, (_, i) => b.commit(termB, [{ op: "putJob", job: job(`b-${i}`) }])),
      ]);
      expect(
        results.slice(0, 10).every((r) => r.status === "rejected" && r.reason instanceof StaleTermError),
      ).toBe(true);
      expect(results.slice(10).every((r) => r.status === "fulfilled")).toBe(true);
      await expect(a.reserveIds(termA, "job", 1)).rejects.toBeInstanceOf(StaleTermError);
      const ids = (await a.load()).jobs.map((j) => j.id);
      expect(ids.filter((id) => id.startsWith("late"))).toStrictEqual([]);
      expect(ids).toHaveLength(11);
    });

    test("a commit waiting for the leadership row while another server takes the lead writes nothing", async () => {
      const store = makeStore();
      await store.open();
      const term = await store.beginTerm();
      await store.commit(term, [{ op: "putJob", job: job("before") }]);
      // Another server's election, holding the row until it commits (tryLead's update).
      const other = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5_000 });
      await other.connect();
      let waited = false;
      try {
        await other.query("BEGIN");
        await other.query(
          `UPDATE ${pg.escapeIdentifier(schema)}.leadership SET term = term + 1 WHERE id = 1`,
        );
        const late = store.commit(term, [
          { op: "putJob", job: job("late") },
          { op: "putTasks", tasks: [task("late", 0)] },
          { op: "addEvent", event: event("late", 1, "from the deposed term") },
        ]);
        late.catch(() => {});
        // The commit waits on the row lock (it has not settled) until the election commits.
        const settled = await Promise.race([
          late.then(
            () => true,
            () => true,
          ),
          new Promise<false>((resolve) => setTimeout(() => resolve(false), 300)),
        ]);
        waited = !settled;
        await other.query("COMMIT");
        await expect(late).rejects.toMatchObject({ term, newest: term + 1 });
        await expect(late).rejects.toBeInstanceOf(StaleTermError);
      } finally {
        await other.end();
      }
      expect(waited).toBe(true);
      const snapshot = await store.load();
      expect(snapshot.jobs.map((each) => each.id)).toStrictEqual(["before"]);
      expect(snapshot.tasks).toStrictEqual([]);
      expect(await store.events("late")).toStrictEqual([]);
    });

    test("a reservation waiting for the leadership row while another server takes the lead reserves nothing", async () => {
      const store = makeStore();
      await store.open();
      const term = await store.beginTerm();
      expect(await store.reserveIds(term, "job", 4)).toBe(1);
      const other = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5_000 });
      await other.connect();
      try {
        await other.query("BEGIN");
        await other.query(
          `UPDATE ${pg.escapeIdentifier(schema)}.leadership SET term = term + 1 WHERE id = 1`,
        );
        const late = store.reserveIds(term, "job", 4);
        late.catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 200));
        await other.query("COMMIT");
        await expect(late).rejects.toMatchObject({ term, newest: term + 1 });
      } finally {
        await other.end();
      }
      expect(await store.reserveIds(term + 1, "job", 4)).toBe(5);
    });

    test("the migrated tables have the columns and types of src/broker/store/schema.ts", async () => {
      const store = makeStore();
      await store.open();
      const columns = await onPostgres(async (client) => {
        const result = await client.query(
          "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = $1",
          [schema],
        );
        return result.rows as {
          table_name: string;
          column_name: string;
          data_type: string;
          is_nullable: string;
        }[];
      });
      for (const table of TABLES) {
        const actual = columns
          .filter((c) => c.table_name === table.name)
          .map((c) => ({ name: c.column_name, type: c.data_type, nullable: c.is_nullable === "YES" }))
          .sort((x, y) => x.name.localeCompare(y.name));
        const declared = [...table.generated, ...table.columns]
          .map((c) => ({ name: c.name, type: c.type, nullable: c.nullable }))
          .sort((x, y) => x.name.localeCompare(y.name));
        expect(actual, table.name).toStrictEqual(declared);
      }
    });

    test("concurrent commits from two stores on one schema all land", async () => {
      const a = makeStore();
      const b = makeStore();
      await Promise.all([a.open(), b.open()]);
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? a : b).commit(TERM, [
            { op: "putJob", job: job(`j-${String(i).padStart(2, "0")}`) },
            { op: "putTasks", tasks: [task("shared", i), task(`j-${i}`, 0)] },
            { op: "addEvent", event: event("shared", i, `e${i}`) },
          ]),
        ),
      );
      const snapshot = await b.load();
      expect(snapshot.jobs).toHaveLength(20);
      expect(snapshot.tasks.filter((t) => t.jobId === "shared")).toHaveLength(20);
      expect((await a.events("shared")).map((e) => e.at)).toStrictEqual(
        Array.from({ length: 20 }, (_, i) => i),
      );
    });
  });
}
