// Prometheus series of the hosts' content caches (the agents' `--cache-gb`), per host and pool:
// files placed from a cache and files fetched, bytes fetched and bytes saved, as each agent's
// latest heartbeat counted them since it started (a counter that restarts with its agent, which
// Prometheus reads as a reset), and the bytes each cache holds. Read from the leading core's
// cluster state when scraped; empty while no core leads here.

import { Counter, Gauge, type Registry } from "prom-client";
import type { HostCacheCounters } from "../../common/model/host-facts.ts";
import type { ClusterState } from "../state/cluster-state.ts";

type Labels = "host" | "pool";

/**
 * The counters' series: name, help, labels (written out: the Grafana dashboard's test reads them
 * from the source), and which of a host's counters each shows.
 */
const COUNTERS: readonly {
  name: string;
  help: string;
  labelNames: readonly Labels[];
  of: keyof HostCacheCounters;
}[] = [
  {
    name: "steward_cache_hits_total",
    help: "Files the host's content cache placed in attempts' folders without fetching them",
    labelNames: ["host", "pool"],
    of: "hits",
  },
  {
    name: "steward_cache_misses_total",
    help: "Files the host's content cache had to fetch (from the server or a URL)",
    labelNames: ["host", "pool"],
    of: "misses",
  },
  {
    name: "steward_cache_fetched_bytes_total",
    help: "Bytes that came over the network into the host's content cache",
    labelNames: ["host", "pool"],
    of: "bytesFetched",
  },
  {
    name: "steward_cache_saved_bytes_total",
    help: "Bytes of the files placed from the host's content cache: what did not come over the network",
    labelNames: ["host", "pool"],
    of: "bytesSaved",
  },
];

/** Each host whose agent reported its cache, with its labels. */
function eachCache(
  state: ClusterState,
  add: (labels: Record<Labels, string>, cache: HostCacheCounters) => void,
): void {
  for (const [name, host] of state.hosts)
    if (host.cache) add({ host: name, pool: host.record.pool }, host.cache);
}

/** Registers the series; `cluster` is the leading core's state, or null while none leads here. */
export function registerHostCacheMetrics(registry: Registry, cluster: () => ClusterState | null): void {
  const registers = [registry];
  for (const { name, help, labelNames, of } of COUNTERS)
    new Counter<Labels>({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        const state = cluster();
        if (state) eachCache(state, (labels, cache) => this.inc(labels, cache[of]));
      },
    });
  new Gauge<Labels>({
    name: "steward_cache_bytes",
    help: "Bytes the host's content cache holds",
    labelNames: ["host", "pool"],
    registers,
    collect() {
      this.reset();
      const state = cluster();
      if (state) eachCache(state, (labels, cache) => this.set(labels, cache.bytesHeld));
    },
  });
}
