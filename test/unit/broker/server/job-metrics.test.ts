// The series of the work counted from a core's committed events and placements, on a real SQLite
// store: the queue wait of each placement, attempts by outcome with their pool and owner (also once
// the job has ended and left memory), out-of-memory kills and migrations, and the slots and GPUs
// used and free read from the cluster state when scraped; a core that no longer leads, none of it.

import { Registry } from "prom-client";
import { afterEach, beforeEach, expect, it } from "vitest";
import { JobMetrics } from "../../../../src/broker/server/job-metrics.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { ended, facts, Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";
import { seriesOf } from "../../../helpers/registry-series.ts";

let harness: Harness;
let registry: Registry;
let metrics: JobMetrics;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
  registry = new Registry();
  metrics = new JobMetrics(registry);
  metrics.watch(harness.core.reactor);
});

afterEach(async () => {
  await harness.close();
});

/** A series of this test's registry (registry-series.ts). */
function series(name: string): Promise<Record<string, number>> {
  return seriesOf(registry, name);
}

async function submit(spec: Record<string, unknown>) {
  const job = await submitOn(harness.core, validateJobSpec({ command: "sleep 100", ...spec }), "alice", []);
  await settle();
  return job;
}

it("counts placements' waits, ends by outcome, OOM kills and migrations by pool and owner; gauges slots and GPUs", async () => {
  await harness.core.agents.attachHost({
    ...hello("h1", [], 4),
    pool: "gpu",
    facts: facts("h1", { pool: "gpu", gpus: ["0", "1"] }),
  });
  harness.now += 1;
  const a = await submit({ resources: { gpus: 1, cpus: 2 } });
  await harness.core.agents.attemptStarted("h1", a.id, 0, 1);
  expect(await series("steward_slots")).toEqual({ "pool=gpu,state=used": 2, "pool=gpu,state=free": 2 });
  expect(await series("steward_gpus")).toEqual({ "pool=gpu,state=used": 1, "pool=gpu,state=free": 1 });
  expect(await series("steward_owner_slots_used")).toEqual({ "owner=alice": 2 });
  expect(await series("steward_owner_gpus_used")).toEqual({ "owner=alice": 1 });

  // Its only attempt runs out of memory: the job ends and leaves memory, still counted as alice's.
  await harness.core.agents.attemptEnded("h1", ended(a.id, 1, "failed", { cause: "oom" }));
  await settle();
  expect(harness.core.reactor.state.jobs.has(a.id)).toBe(false);
  expect(await series("steward_attempts_ended_total")).toEqual({ "outcome=failed,owner=alice,pool=gpu": 1 });
  expect(await series("steward_oom_kills_total")).toEqual({ "owner=alice,pool=gpu": 1 });

  // A job that waited 30 s (by the core's clock) for its host.
  const b = await submit({ requirements: 'host.labels["x"] == "y"' });
  harness.now += 30_000;
  await harness.core.agents.attachHost({
    ...hello("h2", [], 2),
    labels: { x: "y" },
    facts: facts("h2", { labels: { x: "y" } }),
  });
  await settle();
  await harness.core.agents.attemptStarted("h2", b.id, 0, 1);
  await harness.core.agents.attemptEnded("h2", ended(b.id, 1, "migrated"));
  await settle();
  expect(await series("steward_migrations_total")).toEqual({ "owner=alice,pool=default": 1 });
  expect(await series("steward_attempts_ended_total")).toEqual({
    "outcome=failed,owner=alice,pool=gpu": 1,
    "outcome=migrated,owner=alice,pool=default": 1,
  });
  const waits = await series("steward_queue_wait_seconds");
  expect(waits["count owner=alice,pool=gpu"]).toBe(1);
  expect(waits["sum owner=alice,pool=gpu"]).toBe(0);
  // Its 30 s, then none: the migrated task placed again at once (on h2, the only host it may use).
  expect(waits["count owner=alice,pool=default"]).toBe(2);
  expect(waits["sum owner=alice,pool=default"]).toBe(30);
  expect(waits["bucket le=1,owner=alice,pool=default"]).toBe(1);
  expect(waits["bucket le=15,owner=alice,pool=default"]).toBe(1);
  expect(waits["bucket le=30,owner=alice,pool=default"]).toBe(2);
  expect(await series("steward_slots")).toEqual({
    "pool=gpu,state=used": 0,
    "pool=gpu,state=free": 4,
    "pool=default,state=used": 1,
    "pool=default,state=free": 1,
  });

  // No longer leading: the gauges go empty (a standby's would be stale), the counters stay.
  metrics.unwatch();
  expect(await series("steward_slots")).toEqual({});
  expect(await series("steward_owner_slots_used")).toEqual({});
  await harness.core.agents.attemptEnded("h2", ended(b.id, 2, "failed"));
  await settle();
  expect(await series("steward_attempts_ended_total")).toEqual({
    "outcome=failed,owner=alice,pool=gpu": 1,
    "outcome=migrated,owner=alice,pool=default": 1,
  });
});

it("a job ended by a step whose commit is still on its way stays in memory until that commit is durable; its end counts under its owner", async () => {
  await harness.core.agents.attachHost(hello("h1"));
  const job = await submit({});
  let inMemory: boolean | null = null;
  harness.core.reactor.events.on("event", (event) => {
    if (event.kind === "attempt.succeeded") inMemory = harness.core.reactor.state.jobs.has(event.jobId);
  });
  // The start's commit ends after the end's handler ran: it must not retire the job the end just
  // ended, whose own commit is not durable yet.
  await Promise.all([
    harness.core.agents.attemptStarted("h1", job.id, 0, 1),
    harness.core.agents.attemptEnded("h1", ended(job.id, 1)),
  ]);
  await settle();
  expect(inMemory).toBe(true);
  expect(harness.core.reactor.state.jobs.has(job.id)).toBe(false);
  expect(await series("steward_attempts_ended_total")).toEqual({
    "outcome=succeeded,owner=alice,pool=default": 1,
  });
});
