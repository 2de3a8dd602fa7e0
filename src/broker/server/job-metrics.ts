// Prometheus series of the work itself, per pool and per owner: how long tasks wait in the queue,
// how attempts end, preemptions, migrations and out-of-memory kills (counted from the committed
// job events and placements of whichever core leads), and the slots and GPUs used and free (read
// from the cluster state when scraped), and the hosts' content caches (host-cache-metrics.ts).
// deploy/grafana/steward.json is a dashboard over them.

import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { EventRecord } from "../../common/model/records.ts";
import type { AttemptPlaced } from "../reactor/effects.ts";
import type { Reactor } from "../reactor/reactor.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import type { HostEntry, LiveAttempt } from "../state/host-entry.ts";
import { registerHostCacheMetrics } from "./host-cache-metrics.ts";

/** Queue wait buckets, in seconds: from a second to a day. */
export const QUEUE_WAIT_BUCKETS_SECONDS = [
  1,
  5,
  15,
  30,
  60,
  300,
  900,
  1800,
  3600,
  4 * 3600,
  12 * 3600,
  24 * 3600,
];

/** The pool and owner labels of something that happened to a job on a host. */
function labelsOf(state: ClusterState, jobId: string, host: unknown): { pool: string; owner: string } {
  const hostName = typeof host === "string" ? host : "";
  return {
    pool: state.hosts.get(hostName)?.record.pool ?? "unknown",
    // A job may leave memory before the events of the step that ended it come (an earlier step's
    // commit, done after that step ran, retires it): its header keeps the owner.
    owner: state.jobOwner(jobId) ?? "unknown",
  };
}

/**
 * A gauge of the leading core's cluster state, measured when scraped (`measure` adds to it); empty
 * while no core leads here.
 */
function clusterGauge<Label extends string>(
  configuration: { name: string; help: string; labelNames: readonly Label[]; registers: Registry[] },
  cluster: () => ClusterState | null,
  measure: (state: ClusterState, add: (labels: Record<Label, string>, value: number) => void) => void,
): void {
  new Gauge({
    ...configuration,
    collect() {
      this.reset();
      const state = cluster();
      if (!state) return;
      measure(state, (labels, value) => this.inc(labels, value));
    },
  });
}

/**
 * A measure of the connected hosts' units, used and free, per pool: `units` gives a host's used and
 * total, or null for a host that has none.
 */
function usedAndFreePerPool(
  units: (host: HostEntry) => { used: number; total: number } | null,
): (state: ClusterState, add: (labels: Record<"pool" | "state", string>, value: number) => void) => void {
  return (state, add) => {
    for (const host of state.hosts.values()) {
      if (!host.connected) continue;
      const counted = units(host);
      if (counted === null) continue;
      const pool = host.record.pool;
      add({ pool, state: "used" }, counted.used);
      add({ pool, state: "free" }, Math.max(0, counted.total - counted.used));
    }
  };
}

/**
 * A measure of what the live attempts hold, per owner: `held` gives an attempt's units, or null
 * for one that holds none.
 */
function heldPerOwner(
  held: (live: LiveAttempt) => number | null,
): (state: ClusterState, add: (labels: Record<"owner", string>, value: number) => void) => void {
  return (state, add) => {
    for (const host of state.hosts.values())
      for (const live of host.active.values()) {
        const units = held(live);
        if (units !== null) add({ owner: live.job.record.owner }, units);
      }
  };
}

export class JobMetrics {
  readonly #queueWait: Histogram<"pool" | "owner">;
  readonly #attemptsEnded: Counter<"outcome" | "pool" | "owner">;
  readonly #preemptions: Counter<"pool" | "owner">;
  readonly #migrations: Counter<"pool" | "owner">;
  readonly #oomKills: Counter<"pool" | "owner">;
  #reactor: Reactor | null = null;
  #detach: (() => void) | null = null;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#queueWait = new Histogram({
      name: "steward_queue_wait_seconds",
      help: "Time a task waited to be placed: since its job's submit for a first attempt, since the last attempt's end (or its back-off) for a later one",
      labelNames: ["pool", "owner"],
      buckets: QUEUE_WAIT_BUCKETS_SECONDS,
      registers,
    });
    this.#attemptsEnded = new Counter({
      name: "steward_attempts_ended_total",
      help: "Attempts ended, by outcome",
      labelNames: ["outcome", "pool", "owner"],
      registers,
    });
    this.#preemptions = new Counter({
      name: "steward_preemptions_total",
      help: "Running tasks stopped to make room for a job of higher priority (owner: the stopped task's)",
      labelNames: ["pool", "owner"],
      registers,
    });
    this.#migrations = new Counter({
      name: "steward_migrations_total",
      help: "Attempts that ended migrated (rescheduling, contracts, self-migration, walltime, by hand)",
      labelNames: ["pool", "owner"],
      registers,
    });
    this.#oomKills = new Counter({
      name: "steward_oom_kills_total",
      help: "Attempts the kernel killed for their memory limit",
      labelNames: ["pool", "owner"],
      registers,
    });
    const cluster = () => this.#reactor?.state ?? null;
    registerHostCacheMetrics(registry, cluster);
    clusterGauge(
      {
        name: "steward_slots",
        help: "Slots of the connected hosts, used and free, per pool",
        labelNames: ["pool", "state"],
        registers,
      },
      cluster,
      usedAndFreePerPool((host) => ({ used: host.usedSlots, total: host.record.slots })),
    );
    clusterGauge(
      {
        name: "steward_gpus",
        help: "GPUs the connected hosts declare, used and free, per pool",
        labelNames: ["pool", "state"],
        registers,
      },
      cluster,
      usedAndFreePerPool((host) => {
        const gpus = host.facts.gpus ?? [];
        return gpus.length === 0 ? null : { used: host.usedGpus.size, total: gpus.length };
      }),
    );
    clusterGauge(
      {
        name: "steward_owner_slots_used",
        help: "Slots the live attempts of each owner hold",
        labelNames: ["owner"],
        registers,
      },
      cluster,
      heldPerOwner((live) => live.job.cpus),
    );
    clusterGauge(
      {
        name: "steward_owner_gpus_used",
        help: "GPUs the live attempts of each owner hold",
        labelNames: ["owner"],
        registers,
      },
      cluster,
      heldPerOwner((live) => {
        const gpus = live.attempt.placement.reduce((sum, entry) => sum + (entry.gpus?.length ?? 0), 0);
        return gpus > 0 ? gpus : null;
      }),
    );
  }

  /** Counts what the core that now leads commits (a new leader's reactor replaces the old one's). */
  watch(reactor: Reactor): void {
    this.#detach?.();
    this.#reactor = reactor;
    const onEvent = (event: EventRecord) => this.#counted(reactor.state, event);
    const onPlaced = (placed: AttemptPlaced) => {
      const labels = labelsOf(reactor.state, placed.jobId, placed.host);
      this.#queueWait.observe(labels, placed.waitedMs / 1000);
    };
    reactor.events.on("event", onEvent);
    reactor.events.on("placed", onPlaced);
    this.#detach = () => {
      reactor.events.off("event", onEvent);
      reactor.events.off("placed", onPlaced);
    };
  }

  /** Stops counting and gauging: this server no longer leads (the gauges go empty, the counters stay). */
  unwatch(): void {
    this.#detach?.();
    this.#detach = null;
    this.#reactor = null;
  }

  #counted(state: ClusterState, event: EventRecord): void {
    const { kind, data } = event;
    if (kind === "preempt") this.#preemptions.inc(labelsOf(state, event.jobId, data.host));
    if (!kind.startsWith("attempt.") || kind === "attempt.placed") return;
    const labels = labelsOf(state, event.jobId, data.host);
    const outcome = kind.slice("attempt.".length);
    this.#attemptsEnded.inc({ outcome, ...labels });
    if (outcome === "migrated") this.#migrations.inc(labels);
    if (outcome === "failed" && data.cause === "oom") this.#oomKills.inc(labels);
  }
}
