import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { GroupCommitter } from "../../../../src/broker/store/group-commit.ts";
import { SqliteStore } from "../../../../src/broker/store/sqlite.ts";
import type { Change, Store } from "../../../../src/broker/store/store.ts";
import type { AccountingQuery, AttemptRecord } from "../../../../src/common/model/records.ts";
import { attempt, event, job, TERM } from "../../../conformance/store-suite.ts";

const BAD: Change = { op: "putAttempt", attempt: attempt("bad", 0, 1, { host: null as unknown as string }) };

/** A real store whose commits take a while, as PostgreSQL's do: pushes arrive while one is in flight. */
class SlowStore implements Store {
  readonly kind = "sqlite" as const;
  readonly inner: Store;
  readonly batchSizes: number[] = [];
  constructor(inner: Store) {
    this.inner = inner;
  }
  open() {
    return this.inner.open();
  }
  load() {
    return this.inner.load();
  }
  loadLive() {
    return this.inner.loadLive();
  }
  loadJob(id: string) {
    return this.inner.loadJob(id);
  }
  loadJobRecord(id: string) {
    return this.inner.loadJobRecord(id);
  }
  loadTask(jobId: string, index: number) {
    return this.inner.loadTask(jobId, index);
  }
  loadTaskStates(jobId: string) {
    return this.inner.loadTaskStates(jobId);
  }
  findSubmission(owner: string, key: string) {
    return this.inner.findSubmission(owner, key);
  }
  accounting(query: AccountingQuery) {
    return this.inner.accounting(query);
  }
  events(jobId: string) {
    return this.inner.events(jobId);
  }
  eventsAfter(after: number, limit: number, jobId?: string) {
    return this.inner.eventsAfter(after, limit, jobId);
  }
  beginTerm() {
    return this.inner.beginTerm();
  }
  currentTerm() {
    return this.inner.currentTerm();
  }
  reserveIds(term: number, sequence: string, count: number) {
    return this.inner.reserveIds(term, sequence, count);
  }
  close() {
    return this.inner.close();
  }
  async commit(term: number, changes: readonly Change[]) {
    this.batchSizes.push(changes.length);
    await new Promise((resolve) => setTimeout(resolve, 5));
    return this.inner.commit(term, changes);
  }
}

/** A store whose commits hang until released: a stalled connection to the database. */
class StalledStore extends SlowStore {
  #release: () => void = () => {};
  readonly #gate = new Promise<void>((resolve) => {
    this.#release = resolve;
  });
  /** Commits that went through once released. */
  landed: Promise<void>[] = [];
  release(): void {
    this.#release();
  }
  override commit(term: number, changes: readonly Change[]) {
    this.batchSizes.push(changes.length);
    const landing = this.#gate.then(() => this.inner.commit(term, changes));
    this.landed.push(landing);
    return landing;
  }
}

describe("GroupCommitter", () => {
  let dir: string;
  let store: SqliteStore;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-group-"));
    store = new SqliteStore(join(dir, "steward.db"));
    await store.open();
  });

  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("pushes made in one tick become one commit, in push order", async () => {
    const committer = new GroupCommitter(store, TERM);
    const pushes = Array.from({ length: 500 }, (_, i) =>
      committer.push([
        { op: "addEvent", event: event("j", 1000, `e${i}`) },
        { op: "setMeta", key: "last", value: String(i) },
      ]),
    );
    await Promise.all(pushes);
    expect(committer.commits).toBe(1);
    expect((await store.events("j")).map((e) => e.message)).toStrictEqual(
      Array.from({ length: 500 }, (_, i) => `e${i}`),
    );
    expect((await store.load()).meta).toStrictEqual({ last: "499" });
  });

  test("a record put by several pushes of one batch is written once, as it is at the commit", async () => {
    const slow = new SlowStore(store);
    const committer = new GroupCommitter(slow, TERM);
    const record = attempt("j", 0, 1, { state: "starting" });
    const started = committer.push([{ op: "putAttempt", attempt: record }]);
    record.state = "running";
    const running = committer.push([
      { op: "putAttempt", attempt: record },
      { op: "putJob", job: job("j") },
    ]);
    record.state = "ended";
    record.outcome = "succeeded";
    record.endedAt = 2000;
    const ended = committer.push([{ op: "putAttempt", attempt: record }]);
    await Promise.all([started, running, ended]);
    expect(slow.batchSizes).toStrictEqual([2]);
    const [stored] = (await store.load()).attempts;
    expect(stored).toMatchObject({ state: "ended", outcome: "succeeded", endedAt: 2000 });
  });

  test("many concurrent writers, each waiting for its own commits, share commits", async () => {
    const committer = new GroupCommitter(store, TERM);
    const writers = 50;
    const rounds = 20;
    const writer = async (w: number) => {
      for (let r = 0; r < rounds; r++) {
        await committer.push([{ op: "addEvent", event: event(`w${w}`, r, `round ${r}`) }]);
        // Some writers do other work between pushes, so batches are not all alike.
        if (w % 3 === 0) await nextTurn();
      }
    };
    await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
    expect(committer.commits).toBeGreaterThan(0);
    expect(committer.commits).toBeLessThan((writers * rounds) / 5);
    for (let w = 0; w < writers; w++) {
      expect((await store.events(`w${w}`)).map((e) => e.message)).toStrictEqual(
        Array.from({ length: rounds }, (_, r) => `round ${r}`),
      );
    }
  });

  test("pushes that arrive while a commit is in flight are committed together next", async () => {
    const slow = new SlowStore(store);
    const committer = new GroupCommitter(slow, TERM);
    const first = committer.push([{ op: "setMeta", key: "k", value: "first" }]);
    await nextTurn(); // the first batch is now in flight
    const later = Array.from({ length: 10 }, (_, i) =>
      committer.push([{ op: "setMeta", key: "k", value: `later ${i}` }]),
    );
    await Promise.all([first, ...later]);
    expect(slow.batchSizes).toStrictEqual([1, 10]);
    expect(committer.commits).toBe(2);
    expect((await store.load()).meta).toStrictEqual({ k: "later 9" });
  });

  test("onCommitted hears each commit that wrote something: its time and the steps it answered", async () => {
    const slow = new SlowStore(store);
    const committer = new GroupCommitter(slow, TERM);
    const heard: { seconds: number; steps: number }[] = [];
    committer.onCommitted = (seconds, steps) => heard.push({ seconds, steps });
    const first = committer.push([{ op: "setMeta", key: "k", value: "first" }]);
    await nextTurn(); // the first batch is now in flight
    const later = Array.from({ length: 3 }, (_, i) =>
      committer.push([{ op: "setMeta", key: "k", value: `later ${i}` }]),
    );
    // A flush adds a marker with no change to the batch: answered, not counted as a step.
    const flushed = committer.flush();
    await Promise.all([first, ...later, flushed]);
    expect(heard.map((each) => each.steps)).toStrictEqual([1, 3]);
    // SlowStore takes at least 5 ms a commit.
    for (const { seconds } of heard) expect(seconds).toBeGreaterThanOrEqual(0.004);
    // Nothing to write: no commit, nothing heard; a failed commit is not heard either.
    await committer.flush();
    await committer.push([BAD]).catch(() => {});
    expect(heard).toHaveLength(2);
  });

  test("a listener that throws loses no commit: the pushes are answered and later ones commit", async () => {
    const committer = new GroupCommitter(store, TERM);
    const thrown: unknown[] = [];
    const onUncaught = (error: unknown) => thrown.push(error);
    process.prependListener("uncaughtException", onUncaught);
    try {
      committer.onCommitted = () => {
        throw new Error("listener broke");
      };
      await committer.push([{ op: "putJob", job: job("a") }]);
      await committer.push([{ op: "putJob", job: job("b") }]);
      await nextTurn();
      expect((await store.load()).jobs.map((each) => each.id).sort()).toStrictEqual(["a", "b"]);
      expect(committer.commits).toBe(2);
    } finally {
      process.removeListener("uncaughtException", onUncaught);
    }
    expect(thrown.map(String)).toStrictEqual(["Error: listener broke", "Error: listener broke"]);
  });

  test("a push resolves only once its changes are durable", async () => {
    const committer = new GroupCommitter(store, TERM);
    let done = false;
    const pushed = committer.push([{ op: "putJob", job: job("j") }]).then(() => {
      done = true;
    });
    expect(done).toBe(false);
    expect((await store.load()).jobs).toStrictEqual([]);
    await pushed;
    expect((await store.load()).jobs).toStrictEqual([job("j")]);
  });

  test("a failing batch rejects exactly its pushes; other batches and later pushes commit", async () => {
    const committer = new GroupCommitter(store, TERM);
    await committer.push([{ op: "putJob", job: job("before") }]);

    const good1 = committer.push([{ op: "putJob", job: job("good1") }]);
    const bad = committer.push([BAD]);
    const good2 = committer.push([{ op: "putJob", job: job("good2") }]);
    // Pushed once the failure is known: a new batch.
    let afterwards: Promise<void> | undefined;
    const settled = Promise.allSettled([good1, bad, good2]).then((results) => {
      afterwards = committer.push([{ op: "putJob", job: job("after") }]);
      return results;
    });
    const results = await settled;
    expect(results.map((r) => r.status)).toStrictEqual(["rejected", "rejected", "rejected"]);
    const reasons = results.map((r) => (r as PromiseRejectedResult).reason);
    expect(reasons[0]).toBe(reasons[1]); // the batch's one error
    expect(String(reasons[0])).toMatch(/NOT NULL/);
    await afterwards;

    expect((await store.load()).jobs.map((j) => j.id)).toStrictEqual(["after", "before"].sort());
    expect(committer.commits).toBe(2);
  });

  test("with a slow store, a failing batch does not take the queued batch with it", async () => {
    const slow = new SlowStore(store);
    const committer = new GroupCommitter(slow, TERM);
    const bad = committer.push([{ op: "putJob", job: job("a") }, BAD]);
    const badSettled = bad.then(
      () => "resolved",
      () => "rejected",
    );
    await nextTurn();
    const queued = committer.push([{ op: "putJob", job: job("b") }]);
    expect(await badSettled).toBe("rejected");
    await queued;
    expect((await store.load()).jobs.map((j) => j.id)).toStrictEqual(["b"]);
    expect(slow.batchSizes).toStrictEqual([2, 1]);
  });

  test("onFailed hears a failed batch before its pushes do; abandonQueued fails what is queued behind it", async () => {
    const slow = new SlowStore(store);
    const committer = new GroupCommitter(slow, TERM);
    const heard: string[] = [];
    committer.onFailed = (error) => {
      heard.push(`failed: ${String(error).includes("NOT NULL")}`);
      // What was pushed while the batch was in flight was handled on top of it: it goes too.
      committer.abandonQueued(error);
    };
    const bad = committer.push([{ op: "putJob", job: job("a") }, BAD]).catch((error) => {
      heard.push("bad heard");
      return error;
    });
    await nextTurn(); // the bad batch is now in flight
    const queued = committer.push([{ op: "putJob", job: job("b") }]).catch((error) => {
      heard.push("queued heard");
      return error;
    });
    const flushed = committer.flush().then(() => heard.push("flush resolved"));
    const [badError, queuedError] = await Promise.all([bad, queued, flushed]);
    expect(heard.slice(0, 1)).toStrictEqual(["failed: true"]);
    expect(heard.slice(1).sort()).toStrictEqual(["bad heard", "flush resolved", "queued heard"]);
    expect(queuedError).toBe(badError);
    expect(slow.batchSizes).toStrictEqual([2]);
    // Nothing of either is in the store; the next push commits.
    await committer.push([{ op: "putJob", job: job("c") }]);
    expect((await store.load()).jobs.map((j) => j.id)).toStrictEqual(["c"]);
  });

  test("flush waits for everything pushed so far, failed batches included, and does not reject", async () => {
    const committer = new GroupCommitter(store, TERM);
    await committer.flush(); // nothing pending
    const pushes = [
      committer.push([{ op: "putJob", job: job("a") }]).catch(() => {}),
      committer.push([BAD]).catch(() => {}),
    ];
    await committer.flush();
    expect(committer.commits).toBe(0);
    const ok = committer.push([{ op: "putJob", job: job("b") }]);
    await committer.flush();
    expect((await store.load()).jobs.map((j) => j.id)).toStrictEqual(["b"]);
    await Promise.all([...pushes, ok]);
    expect(committer.commits).toBe(1);
  });

  test("flush during an in-flight commit waits for it", async () => {
    const slow = new SlowStore(store);
    const committer = new GroupCommitter(slow, TERM);
    void committer.push([{ op: "putJob", job: job("a") }]);
    await nextTurn();
    await committer.flush();
    expect((await store.load()).jobs.map((j) => j.id)).toStrictEqual(["a"]);
    // The flush itself adds no commit.
    expect(slow.batchSizes).toStrictEqual([1]);
  });

  test("large pushes keep their changes in order inside the batch", async () => {
    const committer = new GroupCommitter(store, TERM);
    const attempts = (n: number): AttemptRecord[] =>
      Array.from({ length: n }, (_, i) => attempt("j", 0, 1, { exitCode: i }));
    const pushes = [0, 1, 2].map((p) =>
      committer.push(
        attempts(100).map((a): Change => ({ op: "putAttempt", attempt: { ...a, reason: `p${p}` } })),
      ),
    );
    await Promise.all(pushes);
    expect((await store.load()).attempts).toStrictEqual([attempt("j", 0, 1, { exitCode: 99, reason: "p2" })]);
  });

  test("close answers at once what waits (the batch in flight and those behind it) and every later push", async () => {
    const stalled = new StalledStore(store);
    const committer = new GroupCommitter(stalled, TERM);
    const outcome = (push: Promise<void>) =>
      push.then(
        () => "committed",
        (error: Error) => error.message,
      );
    const inFlight = outcome(committer.push([{ op: "putJob", job: job("a") }]));
    await nextTurn();
    await nextTurn();
    const behind = outcome(committer.push([{ op: "putJob", job: job("b") }]));
    expect(stalled.batchSizes).toStrictEqual([1]);
    committer.close(new Error("store unavailable: stalled"));
    expect(await inFlight).toBe("store unavailable: stalled");
    expect(await behind).toBe("store unavailable: stalled");
    expect(await outcome(committer.push([{ op: "putJob", job: job("c") }]))).toBe(
      "store unavailable: stalled",
    );
    await committer.flush();
    // The stalled commit may still land (its answer is no longer awaited); nothing after it is tried.
    stalled.release();
    await Promise.all(stalled.landed);
    await nextTurn();
    expect(stalled.batchSizes).toStrictEqual([1]);
    expect((await store.load()).jobs.map((j) => j.id)).toStrictEqual(["a"]);
  });
});
