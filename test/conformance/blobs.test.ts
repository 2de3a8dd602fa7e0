// Runs the BlobStore conformance suite against DiskBlobStore (a temporary folder) and against
// PostgresBlobStore on the PostgreSQL server of STEWARD_TEST_PG_URL (a fresh schema per test,
// migrated by the PostgresStore of that schema), then what only PostgreSQL does: chunk rows of
// bounded size, one row per append, nothing left by a failed write, and the sweep of dropped blobs.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { DiskBlobStore } from "../../src/broker/store/disk-blobs.ts";
import { PostgresStore } from "../../src/broker/store/postgres.ts";
import { BLOB_CHUNK_BYTES, Chunker, PostgresBlobStore } from "../../src/broker/store/postgres-blobs.ts";
import {
  dropSchema,
  freshSchema,
  onPostgres,
  PG_URL,
  postgresUnreachable,
  SAFE_PG_URL,
  urlWithSchema,
} from "../helpers/postgres.ts";
import { chunks, describeBlobConformance, failingStream, readText } from "./blob-suite.ts";

describeBlobConformance("disk", async () => {
  const root = join(await mkdtemp(join(tmpdir(), "steward-blobs-")), "blobs");
  return {
    blobs: new DiskBlobStore(root),
    another: () => new DiskBlobStore(root),
    cleanup: () => rm(join(root, ".."), { recursive: true, force: true }),
  };
});

describe("Chunker", () => {
  test.each([
    { pieces: [], chunks: [] },
    { pieces: [3], chunks: [3] },
    { pieces: [4], chunks: [4] },
    { pieces: [5], chunks: [4, 1] },
    { pieces: [1, 1, 1, 1, 1], chunks: [4, 1] },
    { pieces: [2, 0, 7, 3], chunks: [4, 4, 4] },
    { pieces: [9], chunks: [4, 4, 1] },
  ])("pieces $pieces of size 4 → chunks $chunks", ({ pieces, chunks: expected }) => {
    const chunker = new Chunker(4);
    const bytes = Buffer.from(Array.from({ length: 64 }, (_, i) => i));
    const out: Buffer[] = [];
    let at = 0;
    for (const length of pieces) {
      out.push(...chunker.push(bytes.subarray(at, at + length)));
      at += length;
    }
    const last = chunker.end();
    if (last) out.push(last);
    expect(out.map((chunk) => chunk.byteLength)).toStrictEqual(expected);
    expect(Buffer.concat(out).equals(bytes.subarray(0, at))).toBe(true);
  });
});

const unreachable = await postgresUnreachable();

/** A fresh schema with Steward's tables, made by the record store as a broker would make them. */
async function migratedSchema(): Promise<string> {
  const schema = freshSchema();
  const store = new PostgresStore(PG_URL, { schema });
  await store.open();
  await store.close();
  return schema;
}

if (unreachable && process.env.CI) {
  // CI promises a PostgreSQL server (.ci/run starts one): a missing one is a failure, not a skip.
  test(`PostgreSQL at ${SAFE_PG_URL} is reachable`, () => {
    throw new Error(`cannot reach PostgreSQL at ${SAFE_PG_URL} (STEWARD_TEST_PG_URL): ${unreachable}`);
  });
} else if (unreachable) {
  console.warn(
    `skipping the PostgreSQL blob tests: cannot reach ${SAFE_PG_URL} (set STEWARD_TEST_PG_URL): ${unreachable}`,
  );
  test.skip(`PostgreSQL blobs: no server at ${SAFE_PG_URL} (set STEWARD_TEST_PG_URL)`, () => {});
} else {
  describeBlobConformance("postgres", async () => {
    const schema = await migratedSchema();
    const made: PostgresBlobStore[] = [];
    const make = () => {
      // One through the option, one through the URL's ?schema=, as `--store` gives it.
      const blobs =
        made.length === 0
          ? new PostgresBlobStore(PG_URL, { schema })
          : new PostgresBlobStore(urlWithSchema(schema));
      made.push(blobs);
      return blobs;
    };
    return {
      blobs: make(),
      another: make,
      cleanup: async () => {
        for (const blobs of made) await blobs.close();
        await dropSchema(schema);
      },
    };
  });

  describe("PostgresBlobStore specifics", () => {
    let schema: string;
    let stores: PostgresBlobStore[];

    beforeEach(async () => {
      schema = await migratedSchema();
      stores = [];
    });

    afterEach(async () => {
      for (const store of stores) await store.close();
      await dropSchema(schema);
    });

    function makeStore(options: { droppedGraceMs?: number } = {}): PostgresBlobStore {
      const store = new PostgresBlobStore(PG_URL, { schema, ...options });
      stores.push(store);
      return store;
    }

    async function rows(sql: string): Promise<Record<string, unknown>[]> {
      return onPostgres(async (client) => {
        await client.query(`SET search_path TO ${pg.escapeIdentifier(schema)}`);
        return (await client.query(sql)).rows;
      });
    }

    async function chunkSizes(key: string): Promise<number[]> {
      const found = await rows(
        `SELECT octet_length(c.data) AS n FROM blob_chunks c JOIN blobs b ON b.id = c.blob_id
         WHERE b.key = ${pg.escapeLiteral(key)} AND b.dropped_at IS NULL ORDER BY c.at`,
      );
      return found.map((row) => Number(row.n));
    }

    test("the tables live in the store's schema", async () => {
      const tables = await onPostgres(async (client) => {
        const result = await client.query(
          "SELECT table_schema, table_name FROM information_schema.tables WHERE table_name LIKE 'blob%' AND table_schema = ANY($1) ORDER BY table_name",
          [[schema, "public"]],
        );
        return result.rows.map((row) => `${row.table_schema}.${row.table_name}`);
      });
      expect(tables).toStrictEqual([`${schema}.blob_chunks`, `${schema}.blobs`]);
    });

    test("a written blob is stored in chunks of BLOB_CHUNK_BYTES, whatever the pieces it came in", async () => {
      const blobs = makeStore();
      const size = 5 * BLOB_CHUNK_BYTES + 1_000;
      const pieces = [
        Buffer.alloc(100, 1),
        Buffer.alloc(3 * BLOB_CHUNK_BYTES, 2),
        Buffer.alloc(size - 100 - 3 * BLOB_CHUNK_BYTES, 3),
      ];
      await blobs.write("big", Readable.from(pieces));
      expect(await chunkSizes("big")).toStrictEqual([...Array(5).fill(BLOB_CHUNK_BYTES), 1_000]);
    });

    test("each append is one chunk row, split only past BLOB_CHUNK_BYTES; resends add none", async () => {
      const blobs = makeStore();
      let size = 0;
      for (const text of ["one\n", "two\n", "three\n"])
        size = await blobs.append("log", size, Buffer.from(text));
      await blobs.append("log", 4, Buffer.from("two\n"));
      size = await blobs.append("log", size, Buffer.alloc(BLOB_CHUNK_BYTES + 10, 120));
      expect(await chunkSizes("log")).toStrictEqual([4, 4, 6, BLOB_CHUNK_BYTES, 10]);
      expect(size).toBe(14 + BLOB_CHUNK_BYTES + 10);
    });

    test("a write that fails midway leaves no rows", async () => {
      const blobs = makeStore();
      await expect(blobs.write("result", failingStream())).rejects.toThrow("connection reset");
      expect(await rows("SELECT count(*)::int AS n FROM blobs")).toStrictEqual([{ n: 0 }]);
      expect(await rows("SELECT count(*)::int AS n FROM blob_chunks")).toStrictEqual([{ n: 0 }]);
    });

    test("replaced and deleted blobs keep their chunks for the grace period, then the sweep removes them", async () => {
      const kept = makeStore();
      await kept.write("a", chunks("old"));
      await kept.write("a", chunks("new"));
      await kept.write("jobs/1/x", chunks("x"));
      await kept.deletePrefix("jobs/1");
      expect(await kept.sweep()).toBe(0);
      expect(
        await rows("SELECT key, dropped_at IS NOT NULL AS dropped FROM blobs ORDER BY id"),
      ).toStrictEqual([
        { key: "a", dropped: true },
        { key: "a", dropped: false },
        { key: "jobs/1/x", dropped: true },
      ]);

      const eager = makeStore({ droppedGraceMs: 0 });
      expect(await eager.sweep()).toBe(2);
      expect(await rows("SELECT key FROM blobs")).toStrictEqual([{ key: "a" }]);
      expect(await rows("SELECT count(*)::int AS n FROM blob_chunks")).toStrictEqual([{ n: 1 }]);
      expect(await readText(kept, "a")).toBe("new");
    });

    test("a reader whose blob was swept from under it fails, and says why", async () => {
      const blobs = makeStore({ droppedGraceMs: 0 });
      await blobs.write("ckpt", Readable.from([Buffer.alloc(3 * 1024 * 1024, 7)]));
      const reader = blobs.read("ckpt");
      const iterator = reader[Symbol.asyncIterator]();
      expect((await iterator.next()).done).toBe(false);
      await blobs.write("ckpt", chunks("new"));
      expect(await blobs.sweep()).toBe(1);
      await expect(
        (async () => {
          for (;;) if ((await iterator.next()).done) return;
        })(),
      ).rejects.toThrow(/replaced or deleted/);
    });

    test("keys sort by UTF-16 code units, as on disk, whatever PostgreSQL's order", async () => {
      const blobs = makeStore();
      const keys = ["z", "\u{1F600}", "\uFF5E", "a"];
      for (const key of keys) await blobs.write(key, chunks(key));
      expect((await blobs.list("")).map((info) => info.key)).toStrictEqual([...keys].sort());
    });
  });
}
