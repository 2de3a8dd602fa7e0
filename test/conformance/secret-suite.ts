// The secrets of the Store conformance suite (store-suite.ts calls it inside each store's describe):
// a user's secret is put, replaced and deleted by owner and name, two users' secrets of one name
// are apart, and they survive a reopen; a secret without its value is refused with its batch.

import { describe, expect, test } from "vitest";
import type { Change, Store } from "../../src/broker/store/store.ts";
import type { SecretRecord } from "../../src/common/model/records.ts";

export function secret(owner: string, name: string, overrides: Partial<SecretRecord> = {}): SecretRecord {
  return {
    owner,
    name,
    value: { accessKeyId: `AKIA-${owner}-${name}`, secretAccessKey: "s3cr3t/+=" },
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    ...overrides,
  };
}

/** `current` gives the suite's open store; `reopen` a new one on the same data (null: the store cannot be). */
export function describeSecretConformance(
  current: () => Store,
  reopen: () => Promise<Store> | null,
  term: number,
): void {
  describe("secrets", () => {
    test("a secret round-trips every field, with and without the optional ones", async () => {
      const full = secret("alice", "s3.read-only_1", {
        value: {
          accessKeyId: "AKIAFULL",
          secretAccessKey: "wJalr/K7MDENG+bPxRfiCY",
          sessionToken: "FwoGZXIvYXdzE".repeat(100),
          region: "eu-west-1",
          endpoint: "http://127.0.0.1:9000",
        },
        createdAt: 5,
        updatedAt: 7,
      });
      const bare = secret("alice", "bare");
      await current().commit(term, [
        { op: "putSecret", secret: full },
        { op: "putSecret", secret: bare },
      ]);
      expect((await current().load()).secrets).toStrictEqual([bare, full]);
      expect((await current().loadLive()).secrets).toStrictEqual([bare, full]);
    });

    test("a put of an owner's name replaces its value; another owner's of that name is apart", async () => {
      await current().commit(term, [
        { op: "putSecret", secret: secret("bob", "k") },
        { op: "putSecret", secret: secret("alice", "k") },
      ]);
      const replaced = secret("alice", "k", {
        value: { accessKeyId: "NEW", secretAccessKey: "new" },
        updatedAt: 9,
      });
      await current().commit(term, [{ op: "putSecret", secret: replaced }]);
      expect((await current().load()).secrets).toStrictEqual([replaced, secret("bob", "k")]);
    });

    test("a delete takes the owner's secret only; a delete of none changes nothing", async () => {
      await current().commit(term, [
        { op: "putSecret", secret: secret("alice", "k") },
        { op: "putSecret", secret: secret("bob", "k") },
      ]);
      await current().commit(term, [
        { op: "deleteSecret", owner: "alice", name: "k" },
        { op: "deleteSecret", owner: "carol", name: "k" },
      ]);
      expect((await current().load()).secrets).toStrictEqual([secret("bob", "k")]);
    });

    test("put, delete and put again in one batch apply in order", async () => {
      const again = secret("alice", "k", { updatedAt: 3 });
      const batch: Change[] = [
        { op: "putSecret", secret: secret("alice", "k") },
        { op: "deleteSecret", owner: "alice", name: "k" },
        { op: "putSecret", secret: again },
        { op: "putSecret", secret: secret("alice", "gone") },
        { op: "deleteSecret", owner: "alice", name: "gone" },
      ];
      await current().commit(term, batch);
      expect((await current().load()).secrets).toStrictEqual([again]);
    });

    test("a secret without its value fails its whole batch", async () => {
      await expect(
        current().commit(term, [
          { op: "putSecret", secret: secret("alice", "ok") },
          {
            op: "putSecret",
            secret: secret("alice", "bad", { value: null as unknown as SecretRecord["value"] }),
          },
        ]),
      ).rejects.toThrow();
      expect((await current().load()).secrets).toStrictEqual([]);
    });

    test("secrets are durable across a reopen", async (context) => {
      await current().commit(term, [{ op: "putSecret", secret: secret("alice", "k") }]);
      const reopened = reopen();
      if (reopened === null) return context.skip("this store cannot be reopened");
      const next = await reopened;
      expect((await next.load()).secrets).toStrictEqual([secret("alice", "k")]);
    });
  });
}
