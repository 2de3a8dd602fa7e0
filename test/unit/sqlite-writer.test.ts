// The SQLite store's writers: what a write throws reaches the caller (its message and SQLite's
// code, a stale term as StaleTermError), a failed write leaves the next one unharmed, a commit is
// on disk for a fresh connection once it resolves, and a writer thread that is gone fails its
// requests instead of leaving them waiting. A file store's small commits are done on its own
// connection and large ones in the thread (SqliteWriterSplit), in the order they were asked.

import { statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { SqliteStore } from "../../src/broker/store/sqlite.ts";
import {
  COMMIT_HERE_MAX_ROWS,
  rowsOf,
  SqliteWriterSplit,
  SqliteWriterThread,
} from "../../src/broker/store/sqlite-writer.ts";
import { StaleTermError } from "../../src/broker/store/store.ts";
import type { AttemptRecord } from "../../src/common/model/records.ts";
import { attempt, event, job, task } from "../conformance/store-suite.ts";

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

describe("SQLite writes split by size", () => {
  let dir: string;
  let path: string;
  let db: DatabaseSync;
  let writer: SqliteWriterSplit;
  let term: number;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-split-"));
    path = join(dir, "steward.db");
    // The store makes the tables; the test then writes through a split writer of its own.
    const made = new SqliteStore(path);
    await made.open();
    await made.close();
    db = new DatabaseSync(path);
    // Small commits here whatever share of the time the writes take (that rule: write-share.test.ts).
    writer = new SqliteWriterSplit(db, path, { share: { maxShare: Number.POSITIVE_INFINITY } });
    term = await writer.request<number>({ op: "beginTerm" });
  });

  afterEach(async () => {
    await writer.close();
    db.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The tasks row of job j-1's task 0 as a fresh connection reads it: its state. */
  function stateOnDisk(): string | undefined {
    const other = new DatabaseSync(path, { readOnly: true });
    try {
      const row = other.prepare("SELECT state FROM tasks WHERE job_id = 'j-1' AND idx = 0").get();
      return row?.state as string | undefined;
    } finally {
      other.close();
    }
  }

  test.each([
    { changes: [{ op: "putJob" as const, job: job("j-1") }], rows: 1 },
    {
      changes: [
        { op: "putJob" as const, job: job("j-1") },
        { op: "putTasks" as const, tasks: [task("j-1", 0), task("j-1", 1), task("j-1", 2)] },
      ],
      rows: 4,
    },
    { changes: [], rows: 0 },
  ])("rowsOf counts a task a row and any other change one: $rows", ({ changes, rows }) => {
    expect(rowsOf(changes)).toBe(rows);
  });

  test("a small commit is done before it resolves, in this thread, and is on disk", async () => {
    const small = writer.commit(term, [
      { op: "putJob", job: job("j-1") },
      { op: "putTasks", tasks: [task("j-1", 0, { state: "running" })] },
    ]);
    // Done already (a commit sent to the thread is not, before the thread has had a turn).
    expect(stateOnDisk()).toBe("running");
    await small;
  });

  test("a large commit goes to the thread; a small one asked after it waits behind it and wins", async () => {
    const many = Array.from({ length: COMMIT_HERE_MAX_ROWS + 1 }, (_, index) =>
      task("j-1", index, { state: "pending" }),
    );
    const large = writer.commit(term, [
      { op: "putJob", job: job("j-1") },
      { op: "putTasks", tasks: many },
    ]);
    expect(stateOnDisk()).toBeUndefined();
    // Asked while the large one waits: done after it, so its state is the one that stays.
    const small = writer.commit(term, [{ op: "putTasks", tasks: [task("j-1", 0, { state: "running" })] }]);
    await Promise.all([large, small]);
    expect(stateOnDisk()).toBe("running");
  });

  test("the thread checkpoints the log that commits done here grow (they never do it themselves)", async () => {
    /** The log's size after 200 small commits, with a checkpoint every `every` commits. */
    async function logAfterSmallCommits(every: number, name: string): Promise<number> {
      const file = join(dir, `${name}.db`);
      const made = new SqliteStore(file);
      await made.open();
      await made.close();
      const own = new DatabaseSync(file);
      const split = new SqliteWriterSplit(own, file, {
        commitsACheckpoint: every,
        share: { maxShare: Number.POSITIVE_INFINITY },
      });
      try {
        const begun = await split.request<number>({ op: "beginTerm" });
        for (let i = 0; i < 200; i++) await split.commit(begun, [{ op: "putJob", job: job(`j-${i}`) }]);
        // Behind the last checkpoint asked for: answered once it is done.
        await split.request({ op: "beginTerm" });
        return statSync(`${file}-wal`).size;
      } finally {
        await split.close();
        own.close();
      }
    }
    const never = await logAfterSmallCommits(Number.POSITIVE_INFINITY, "never");
    const every10 = await logAfterSmallCommits(10, "every10");
    expect(every10).toBeLessThan(never / 3);
  });

  test("once the writes take more than their share of the time, small commits go to the thread", async () => {
    await writer.close();
    // A window of no time and no share: the first small commit (no write counted yet) is done
    // here, and the next, with that write counted, goes to the thread.
    writer = new SqliteWriterSplit(db, path, { share: { windowMs: 0, maxShare: 0 } });
    const first = writer.commit(term, [
      { op: "putJob", job: job("j-1") },
      { op: "putTasks", tasks: [task("j-1", 0, { state: "pending" })] },
    ]);
    expect(stateOnDisk()).toBe("pending");
    await first;
    const second = writer.commit(term, [{ op: "putTasks", tasks: [task("j-1", 0, { state: "running" })] }]);
    expect(stateOnDisk()).toBe("pending");
    await second;
    expect(stateOnDisk()).toBe("running");
  });

  test("a small commit asked while a term is begun in the thread waits behind it", async () => {
    const newer = writer.request<number>({ op: "beginTerm" });
    // The older term: refused once the newer one is recorded, which it would not be were it done first.
    const small = writer.commit(term, [{ op: "putJob", job: job("j-1") }]);
    await expect(small).rejects.toBeInstanceOf(StaleTermError);
    expect(await newer).toBe(term + 1);
  });
});
