// The series of the hosts' content caches, read from a core's cluster state when scraped: each
// host's counters as its latest heartbeat gave them, by host and pool; a host whose agent sent none
// (an older agent) has no sample; a heartbeat's new counters replace the last ones; a core that no
// longer leads, none of it.

import { Registry } from "prom-client";
import { afterEach, beforeEach, expect, it } from "vitest";
import { JobMetrics } from "../../../../src/broker/server/job-metrics.ts";
import { facts, Harness, hello } from "../../../helpers/core-harness.ts";
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

const counters = (hits: number, misses: number) => ({
  hits,
  misses,
  bytesFetched: misses * 100,
  bytesSaved: hits * 100,
  bytesHeld: 100,
});

it("shows each host's cache counters by host and pool, as its latest heartbeat gave them", async () => {
  await harness.core.agents.attachHost({
    ...hello("h1", [], 2),
    pool: "gpu",
    facts: facts("h1", { pool: "gpu" }),
  });
  await harness.core.agents.attachHost(hello("h2", [], 2));
  await harness.core.agents.attachHost(hello("old", [], 2));
  await harness.core.heartbeat("h1", facts("h1", { pool: "gpu" }), [], [], counters(3, 1));
  await harness.core.heartbeat("h2", facts("h2"), [], [], counters(0, 2));
  await harness.core.heartbeat("old", facts("old"));
  expect(await series("steward_cache_hits_total")).toEqual({
    "host=h1,pool=gpu": 3,
    "host=h2,pool=default": 0,
  });
  expect(await series("steward_cache_misses_total")).toEqual({
    "host=h1,pool=gpu": 1,
    "host=h2,pool=default": 2,
  });
  expect(await series("steward_cache_fetched_bytes_total")).toEqual({
    "host=h1,pool=gpu": 100,
    "host=h2,pool=default": 200,
  });
  expect(await series("steward_cache_saved_bytes_total")).toEqual({
    "host=h1,pool=gpu": 300,
    "host=h2,pool=default": 0,
  });
  expect(await series("steward_cache_bytes")).toEqual({
    "host=h1,pool=gpu": 100,
    "host=h2,pool=default": 100,
  });

  await harness.core.heartbeat("h1", facts("h1", { pool: "gpu" }), [], [], counters(5, 1));
  expect((await series("steward_cache_hits_total"))["host=h1,pool=gpu"]).toBe(5);

  metrics.unwatch();
  expect(await series("steward_cache_hits_total")).toEqual({});
});
