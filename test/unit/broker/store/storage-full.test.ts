// A write refused for a full store is told apart from every other error: node:sqlite's SQLITE_FULL
// (as it comes, and as it crosses from the writer's thread), a system call's ENOSPC and EDQUOT.

import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { StorageFullError, storageFullOf } from "../../../../src/broker/store/storage-full.ts";

/** node:sqlite's own error of a database that cannot grow (its pages capped, as a full disk does). */
function sqliteFull(): unknown {
  const db = new DatabaseSync(":memory:");
  try {
    db.exec("CREATE TABLE t (x TEXT)");
    db.exec("PRAGMA max_page_count = 3");
    for (let i = 0; i < 100; i++) db.prepare("INSERT INTO t VALUES (?)").run("x".repeat(1000));
  } catch (error) {
    return error;
  } finally {
    db.close();
  }
  throw new Error("the database never filled up");
}

/** A system call's error as Node makes it. */
function errno(code: string): Error {
  return Object.assign(new Error(`${code}: something, write`), { code, errno: -28, syscall: "write" });
}

describe("storageFullOf", () => {
  it("takes node:sqlite's SQLITE_FULL for a full store, naming the path it is given", () => {
    const full = storageFullOf(sqliteFull(), "/data/steward.db");
    expect(full).toBeInstanceOf(StorageFullError);
    expect(full?.path).toBe("/data/steward.db");
    expect(full?.message).toBe(
      "no space left for /data/steward.db (database or disk is full): writes are refused until space is freed there",
    );
  });

  it("takes the same error as it crosses from the writer's thread (its fields, not its class)", () => {
    const crossed = Object.assign(new Error("database or disk is full"), {
      code: "ERR_SQLITE_ERROR",
      errcode: 13,
      errstr: "database or disk is full",
    });
    expect(storageFullOf(crossed, "/d/s.db")?.path).toBe("/d/s.db");
  });

  it.each([
    { code: "ENOSPC", detail: "no space left on device" },
    { code: "EDQUOT", detail: "disk quota exceeded" },
  ])("takes $code for a full store", ({ code, detail }) => {
    const full = storageFullOf(errno(code), "/data/blobs");
    expect(full?.message).toBe(
      `no space left for /data/blobs (${detail}): writes are refused until space is freed there`,
    );
  });

  it("leaves every other error alone", () => {
    const others: unknown[] = [
      errno("EACCES"),
      errno("EIO"),
      Object.assign(new Error("constraint failed"), { code: "ERR_SQLITE_ERROR", errcode: 19 }),
      // SQLITE_IOERR_WRITE: an extended code of another primary code than SQLITE_FULL.
      Object.assign(new Error("disk I/O error"), { code: "ERR_SQLITE_ERROR", errcode: 778 }),
      new Error("no space left"),
      null,
      "ENOSPC",
    ];
    for (const error of others) expect(storageFullOf(error, "/p")).toBeNull();
  });

  it("keeps a StorageFullError as it is", () => {
    const full = new StorageFullError("/a", "no space left on device");
    expect(storageFullOf(full, "/b")).toBe(full);
  });
});
