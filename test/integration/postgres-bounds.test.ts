// The PostgreSQL store's bounds (src/broker/store/pg-bounds.ts) against a real database reached
// through the tests' forwarder: while the link is stalled (open, no byte passing) or cut, each
// call fails within its bound with an error the broker reads as the store's unavailability, and
// once the link is mended the same store serves again.

import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterEach, describe, expect, it, test } from "vitest";
import { STORE_ANSWER_MS } from "../../src/broker/store/pg-bounds.ts";
import { inTransaction } from "../../src/broker/store/pg-transaction.ts";
import { PostgresStore } from "../../src/broker/store/postgres.ts";
import { storeUnavailableReason } from "../../src/broker/store/store-unavailable.ts";
import { job } from "../conformance/store-suite.ts";
import { dropSchema, freshSchema, PG_URL, postgresUnreachable, SAFE_PG_URL } from "../helpers/postgres.ts";
import { BLACKHOLE, PASS, RESET, startForwarder, type TcpForwarder } from "../helpers/tcp-forwarder.ts";

const unreachable = await postgresUnreachable();
/** Time past a bound for the failure to come back (a loaded machine). */
const SLACK_MS = 1500;

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function forwarderToPostgres(): Promise<{ forwarder: TcpForwarder; url: string }> {
  const target = new URL(PG_URL);
  const forwarder = await startForwarder({
    target: { host: target.hostname, port: Number(target.port || 5432) },
  });
  closing.push(() => forwarder.close());
  const url = new URL(PG_URL);
  url.host = `${forwarder.host}:${forwarder.port}`;
  return { forwarder, url: url.toString() };
}

async function storeThrough(url: string): Promise<PostgresStore> {
  const schema = freshSchema("steward_bounds");
  closing.push(() => dropSchema(schema));
  const store = new PostgresStore(url, { schema });
  closing.push(() => store.close());
  await store.open();
  return store;
}

/** How `work` failed, and how long it took to. */
async function failure(work: () => Promise<unknown>): Promise<{ ms: number; reason: string | null }> {
  const started = Date.now();
  try {
    await work();
  } catch (error) {
    return { ms: Date.now() - started, reason: storeUnavailableReason(error) };
  }
  throw new Error("it did not fail");
}

if (unreachable && process.env.CI) {
  test(`PostgreSQL at ${SAFE_PG_URL} is reachable`, () => {
    throw new Error(`cannot reach PostgreSQL at ${SAFE_PG_URL} (STEWARD_TEST_PG_URL): ${unreachable}`);
  });
} else if (unreachable) {
  test.skip(`PostgreSQL bounds: no PostgreSQL at ${SAFE_PG_URL} (set STEWARD_TEST_PG_URL)`, () => {});
} else {
  describe("the PostgreSQL store's bounds", () => {
    it("stalled: a commit, a lease read and a new connection each fail within the bound, as unavailability; mended, the store serves", async () => {
      const { forwarder, url } = await forwarderToPostgres();
      const store = await storeThrough(url);
      const term = await store.beginTerm();
      await store.commit(term, [{ op: "putJob", job: job("before") }]);

      forwarder.setMode(BLACKHOLE);
      const calls: [string, () => Promise<unknown>][] = [
        [
          "a commit of puts (one statement)",
          () => store.commit(term, [{ op: "putJob", job: job("during") }]),
        ],
        [
          "a commit in a transaction",
          () =>
            store.commit(term, [
              { op: "deleteJob", jobId: "before" },
              { op: "putJob", job: job("during-2") },
            ]),
        ],
        ["the lease read", () => store.leadership()],
      ];
      for (const [what, call] of calls) {
        const failed = await failure(call);
        expect(failed.reason, what).not.toBeNull();
        expect(failed.ms, what).toBeLessThan(STORE_ANSWER_MS + SLACK_MS);
      }
      // A store opened while stalled fails too, instead of hanging at its first connection.
      const opening = await failure(() =>
        new PostgresStore(url, { schema: freshSchema("steward_bounds") }).open(),
      );
      expect(opening.reason).not.toBeNull();
      expect(opening.ms).toBeLessThan(STORE_ANSWER_MS + SLACK_MS);

      forwarder.setMode(PASS);
      await store.commit(term, [{ op: "putJob", job: job("after") }]);
      expect((await store.leadership()).term).toBe(term);
      expect((await store.loadJobRecord("before"))?.id).toBe("before");
      expect((await store.loadJobRecord("after"))?.id).toBe("after");
    }, 60_000);

    it("cut: calls fail at once, as unavailability; mended, the store serves", async () => {
      const { forwarder, url } = await forwarderToPostgres();
      const store = await storeThrough(url);
      const term = await store.beginTerm();
      forwarder.setMode(RESET);
      for (const call of [
        () => store.commit(term, [{ op: "putJob", job: job("during") }]),
        () => store.leadership(),
      ]) {
        const failed = await failure(call);
        expect(failed.reason).not.toBeNull();
        expect(failed.ms).toBeLessThan(SLACK_MS);
      }
      forwarder.setMode(PASS);
      await store.commit(term, [{ op: "putJob", job: job("after") }]);
      expect((await store.loadJobRecord("after"))?.id).toBe("after");
    }, 60_000);

    it("a transaction stalled in its middle fails within one bound: no ROLLBACK that would wait as long again", async () => {
      const { forwarder, url } = await forwarderToPostgres();
      const answerMs = 800;
      const pool = new pg.Pool({
        connectionString: url,
        query_timeout: answerMs,
        connectionTimeoutMillis: answerMs,
      });
      pool.on("error", () => {});
      closing.push(() => pool.end());
      const failed = await failure(() =>
        inTransaction(pool, "BEGIN", async (client) => {
          forwarder.setMode(BLACKHOLE);
          await client.query("SELECT 1");
        }),
      );
      expect(failed.reason).toBe("no answer in time (stalled?)");
      expect(failed.ms).toBeLessThan(1.5 * answerMs);
      forwarder.setMode(PASS);
      // The stalled connection was dropped, not pooled again: the next transaction is answered.
      await sleep(50);
      expect(
        await inTransaction(pool, "BEGIN", async (client) => (await client.query("SELECT 2 AS n")).rows[0].n),
      ).toBe(2);
    }, 30_000);
  });
}
