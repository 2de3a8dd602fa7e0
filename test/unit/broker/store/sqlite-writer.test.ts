// The SQLite store's writer thread: what a write throws there reaches the caller (its message and
// SQLite's code, a stale term as StaleTermError), a failed write leaves the next one unharmed, a
// commit is on disk for a fresh connection once it resolves, and a writer that is gone fails its
// requests instead of leaving them waiting.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { SqliteStore } from "../../../../src/broker/store/sqlite.ts";
import { SqliteWriterThread } from "../../../../src/broker/store/sqlite-writer.ts";
import { StaleTermError } from "../../../../src/broker/store/store.ts";
import type { AttemptRecord } from "../../../../src/common/model/records.ts";
import { attempt, event, job } from "../../../conformance/store-suite.ts";

describe("SQLite writer thread", () => {
  let dir: string;
  let store: SqliteStore;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-writer-"));
    store = new SqliteStore(join(dir, "steward.db"));
    await store.open();
  });

  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("a write that fails there rejects with SQLite's message and code; the next write commits", async () => {
    const term = await store.beginTerm();
    const bad = attempt("j-1", 0, 1, { host: null as unknown as string }) as AttemptRecord;
    const refused = store.commit(term, [
      { op: "putJob", job: job("j-1") },
      { op: "putAttempt", attempt: bad },
    ]);
    await expect(refused).rejects.toThrow(/NOT NULL/);
    await expect(refused).rejects.toMatchObject({ code: "ERR_SQLITE_ERROR" });
    await store.commit(term, [{ op: "putJob", job: job("j-2") }]);
    const ids = (await store.load()).jobs.map((each) => each.id);
    expect(ids).toEqual(["j-2"]);
  });

  test("a stale term comes back as StaleTermError, with its terms", async () => {
    const old = await store.beginTerm();
    const newer = await store.beginTerm();
    const refused = store.commit(old, []);
    await expect(refused).rejects.toBeInstanceOf(StaleTermError);
    await expect(refused).rejects.toMatchObject({ term: old, newest: newer });
  });

  test("a commit that resolved is on disk for another connection, its events numbered", async () => {
    const term = await store.beginTerm();
    const submitted = event("j-1", 1, "submitted");
    await store.commit(term, [
      { op: "putJob", job: job("j-1") },
      { op: "addEvent", event: submitted },
    ]);
    expect(submitted.id).toBeGreaterThan(0);
    const other = new DatabaseSync(join(dir, "steward.db"), { readOnly: true });
    try {
      expect(other.prepare("SELECT count(*) AS n FROM jobs").get()).toEqual({ n: 1 });
      expect(other.prepare("SELECT id FROM events").get()).toEqual({ id: submitted.id });
    } finally {
      other.close();
    }
  });

  test("once the thread is gone, requests fail at once", async () => {
    const writer = new SqliteWriterThread(join(dir, "steward.db"));
    expect(await writer.request<number>({ op: "beginTerm" })).toBeGreaterThan(0);
    await writer.close();
    await expect(writer.request({ op: "beginTerm" })).rejects.toThrow(/writer thread ended/);
  });
});
