// Where `steward server` keeps its blobs: --blobs DIR when given; otherwise PostgreSQL with a
// PostgreSQL store, DATA/blobs without one. Nothing connects here: the stores connect when opened.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, expect, test } from "vitest";
import { DiskBlobStore } from "../../../src/broker/store/disk-blobs.ts";
import { PostgresStore } from "../../../src/broker/store/postgres.ts";
import { PostgresBlobStore } from "../../../src/broker/store/postgres-blobs.ts";
import { SqliteStore } from "../../../src/broker/store/sqlite.ts";
import { type DataDir, openDataDir } from "../../../src/daemons/data-dir.ts";
import { cleanup } from "../../helpers/steward.ts";

const STORE = "postgres://steward@127.0.0.1:1/grid?schema=cluster";
const opened: DataDir[] = [];
const dirs: string[] = [];

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "steward-data-dir-"));
  dirs.push(dir);
  return dir;
}

function open(storeUrl?: string, blobsDir?: string): DataDir {
  const data = openDataDir(folder(), {}, storeUrl, blobsDir);
  opened.push(data);
  return data;
}

afterEach(async () => {
  for (const data of opened.splice(0)) await data.close();
  cleanup(...dirs.splice(0));
});

test.each([
  { flags: "neither", store: undefined, blobs: undefined, records: SqliteStore, files: "DATA/blobs" },
  { flags: "--store", store: STORE, blobs: undefined, records: PostgresStore, files: "PostgreSQL" },
  { flags: "--store --blobs", store: STORE, blobs: "shared", records: PostgresStore, files: "DIR" },
  { flags: "--blobs", store: undefined, blobs: "shared", records: SqliteStore, files: "DIR" },
])("$flags: records in $records.name, files in $files", ({ store, blobs, records, files }) => {
  const shared = blobs === undefined ? undefined : join(folder(), blobs);
  const data = open(store, shared);
  expect(data.store).toBeInstanceOf(records);
  if (files === "PostgreSQL") {
    expect(data.blobs).toBeInstanceOf(PostgresBlobStore);
    expect((data.blobs as PostgresBlobStore).schema).toBe("cluster");
    expect(data.blobsWhere).toMatch(/PostgreSQL/);
    return;
  }
  const expected = files === "DIR" ? resolve(shared!) : join(data.root, "blobs");
  expect(data.blobs).toBeInstanceOf(DiskBlobStore);
  expect((data.blobs as DiskBlobStore).root).toBe(expected);
  expect(data.blobsWhere).toBe(expected);
});

test("close ends the PostgreSQL blob store's pool, and may be called twice", async () => {
  const data = open(STORE);
  await data.close();
  await data.close();
  await expect((data.blobs as PostgresBlobStore).stat("x")).rejects.toThrow();
});
