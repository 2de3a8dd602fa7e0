// Which hosts' caches hold which objects, as their heartbeats said: a host's new summary replaces
// its last, a host that holds nothing is named nowhere, and a host forgotten (its agent detached)
// leaves no trace; digests no host holds are dropped.

import { expect, it } from "vitest";
import { CacheHolders } from "../../../../src/broker/state/cache-holders.ts";

const A = "a".repeat(64);
const B = "b".repeat(64);

/** The holders as plain data: `{digest: {host: bytes}}`. */
function table(holders: CacheHolders): Record<string, Record<string, number>> {
  return Object.fromEntries(
    [...holders.byDigest].map(([digest, hosts]) => [digest, Object.fromEntries(hosts)]),
  );
}

it("keeps, by digest, the hosts holding it and its size", () => {
  const holders = new CacheHolders();
  holders.set("h1", [
    { sha256: A, bytes: 10 },
    { sha256: B, bytes: 20 },
  ]);
  holders.set("h2", [{ sha256: A, bytes: 10 }]);
  expect(table(holders)).toStrictEqual({ [A]: { h1: 10, h2: 10 }, [B]: { h1: 20 } });
  expect(holders.hosts).toBe(2);
});

it("replaces a host's summary with its next one", () => {
  const holders = new CacheHolders();
  holders.set("h1", [
    { sha256: A, bytes: 10 },
    { sha256: B, bytes: 20 },
  ]);
  holders.set("h2", [{ sha256: B, bytes: 20 }]);
  holders.set("h1", [{ sha256: A, bytes: 11 }]);
  expect(table(holders)).toStrictEqual({ [A]: { h1: 11 }, [B]: { h2: 20 } });
  holders.set("h1", []);
  expect(table(holders)).toStrictEqual({ [B]: { h2: 20 } });
  expect(holders.hosts).toBe(1);
});

it("forgets a host, and nothing else", () => {
  const holders = new CacheHolders();
  holders.set("h1", [{ sha256: A, bytes: 10 }]);
  holders.set("h2", [
    { sha256: A, bytes: 10 },
    { sha256: B, bytes: 5 },
  ]);
  holders.forget("h2");
  holders.forget("unknown");
  expect(table(holders)).toStrictEqual({ [A]: { h1: 10 } });
  expect(holders.hosts).toBe(1);
  holders.forget("h1");
  expect(table(holders)).toStrictEqual({});
  expect(holders.hosts).toBe(0);
});

it("counts a digest named twice in one summary once", () => {
  const holders = new CacheHolders();
  holders.set("h1", [
    { sha256: A, bytes: 10 },
    { sha256: A, bytes: 10 },
  ]);
  holders.forget("h1");
  expect(table(holders)).toStrictEqual({});
});
