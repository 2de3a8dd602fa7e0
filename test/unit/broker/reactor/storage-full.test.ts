// A commit refused because the store is full: memory is taken back to what the store has (the
// failed step, and every step handled on top of it), the request fails with the StorageFullError
// (the API answers 507), the core goes on without exiting, and once space is freed it commits
// again, a placement refused meanwhile included.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { STORAGE_FULL_RETRY_MS } from "../../../../src/broker/reactor/reactor.ts";
import { DISCOVERY_SECONDS } from "../../../../src/broker/scheduler/policy.ts";
import { recoverState } from "../../../../src/broker/state/recover.ts";
import { SqliteStore } from "../../../../src/broker/store/sqlite.ts";
import { StorageFullError } from "../../../../src/broker/store/storage-full.ts";
import type { Change } from "../../../../src/broker/store/store.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { facts, Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";
import { durable } from "../../../helpers/durable-state.ts";

/**
 * A real SQLite store that refuses writes as a full disk does while `full` (once only, when
 * `freedAfterOne`: space freed right after); its commits take `delayMs`.
 */
class FillableStore extends SqliteStore {
  full = false;
  freedAfterOne = false;
  delayMs = 0;

  constructor() {
    super(":memory:");
  }

  override async commit(term: number, changes: readonly Change[]): Promise<void> {
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.full) {
      if (this.freedAfterOne) this.full = false;
      throw new StorageFullError(this.path, "database or disk is full");
    }
    return super.commit(term, changes);
  }

  override async reserveIds(term: number, sequence: string, count: number): Promise<number> {
    if (this.full) throw new StorageFullError(this.path, "database or disk is full");
    return super.reserveIds(term, sequence, count);
  }
}

let store: FillableStore;
let harness: Harness;

beforeEach(async () => {
  store = new FillableStore();
  harness = new Harness(store);
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

/**
 * Memory agrees with the store: the state a restart would recover is the live one. */
async function expectMemoryAsStored(): Promise<void> {
  await harness.core.reactor.committed();
  const recovered = recoverState(await store.loadLive(), harness.now, {}, harness.core.reactor.state.qos);
  expect(durable(harness.core.reactor.state)).toEqual(durable(recovered));
}

describe("a full store", () => {
  it("refuses a submit with nothing left of it in memory; the core goes on and commits once space is freed", async () => {
    const before = await submitOn(harness.core, validateJobSpec({ command: "true" }), "alice");
    store.full = true;
    const refused = submitOn(harness.core, validateJobSpec({ command: "true" }), "alice");
    await expect(refused).rejects.toBeInstanceOf(StorageFullError);
    await expect(refused).rejects.toThrow(":memory: (database or disk is full)");
    expect(harness.fatal).toStrictEqual([]);
    expect([...harness.core.reactor.state.jobs.keys()]).toStrictEqual([before.id]);
    await expectMemoryAsStored();
    store.full = false;
    const after = await submitOn(harness.core, validateJobSpec({ command: "true" }), "alice");
    expect([...harness.core.reactor.state.jobs.keys()].sort()).toStrictEqual([before.id, after.id].sort());
    await expectMemoryAsStored();
  });

  it("takes back the steps handled on top of the one refused (a pass's placement of its task, a cancel), and sends nothing", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    // Ids reserved while there is space: the next submit takes one without writing.
    await submitOn(harness.core, validateJobSpec({ command: "true" }), "alice");
    await settle();
    const sentBefore = harness.starts().length;
    const usedBefore = harness.core.reactor.state.hosts.get("h1")?.usedSlots;
    // Space is freed right after the refusal: what was queued behind it must not commit.
    store.full = true;
    store.freedAfterOne = true;
    store.delayMs = 20;
    const refused = submitOn(harness.core, validateJobSpec({ command: "sleep 1" }), "alice");
    // The pass runs while the submit's commit is on its way: it places the new task on h1. A
    // cancel of the new job comes meanwhile, queued behind that commit: it goes with it.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const [pending] = [...harness.core.reactor.state.jobs.values()].filter(
      (job) => job.record.spec.command !== "true",
    );
    const cancelled = harness.core.jobs.cancel(pending.id);
    await expect(refused).rejects.toBeInstanceOf(StorageFullError);
    await expect(cancelled).rejects.toBeInstanceOf(StorageFullError);
    await settle();
    expect(harness.starts()).toHaveLength(sentBefore);
    expect(harness.core.reactor.state.hosts.get("h1")?.usedSlots).toBe(usedBefore);
    expect(harness.core.reactor.state.jobs.size).toBe(1);
    expect(harness.fatal).toStrictEqual([]);
    store.delayMs = 0;
    await expectMemoryAsStored();
  });

  it("takes back the steps not committed newest first: a drain and an undrain refused leave the host ready", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    store.full = true;
    store.delayMs = 20;
    const drained = harness.core.hosts.drain("h1");
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(harness.core.reactor.state.hosts.get("h1")?.record.state).toBe("draining");
    const undrained = harness.core.hosts.undrain("h1");
    await expect(drained).rejects.toBeInstanceOf(StorageFullError);
    await expect(undrained).rejects.toBeInstanceOf(StorageFullError);
    expect(harness.core.reactor.state.hosts.get("h1")?.record.state).toBe("ready");
    store.full = false;
    store.delayMs = 0;
    await expectMemoryAsStored();
  });

  it("places again, once space is freed, a task whose placement it refused", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    // h1 has too little memory free for the job until a heartbeat says otherwise (no commit).
    await harness.core.heartbeat("h1", facts("h1", { memFreeMb: 0 }));
    const job = await submitOn(
      harness.core,
      validateJobSpec({ command: "true", requirements: "host.memFreeMb >= 4000.0" }),
      "alice",
    );
    await settle();
    expect(harness.starts()).toStrictEqual([]);
    // The memory is free while the store is full: the pass that finds it places the task, refused.
    store.full = true;
    await harness.core.heartbeat("h1", facts("h1"));
    harness.now += DISCOVERY_SECONDS * 1000;
    harness.core.touch("h1");
    harness.core.reactor.tick();
    await settle();
    expect(harness.starts()).toStrictEqual([]);
    expect(job.tasks[0].state).toBe("pending");
    await expectMemoryAsStored();
    // Space is freed: the task is looked at again, without any other event to wake the scheduler.
    store.full = false;
    harness.now += STORAGE_FULL_RETRY_MS;
    harness.core.touch("h1");
    harness.core.reactor.tick();
    await settle();
    expect(harness.starts().map((start) => [start.jobId, start.attempt])).toStrictEqual([[job.id, 1]]);
    expect(harness.fatal).toStrictEqual([]);
    await expectMemoryAsStored();
  });
});
