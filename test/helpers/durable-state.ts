// What the store must hold of a broker's state in memory: everything but soft state (leases,
// connections, progress), in an order that compares. Two states with equal projections agree on
// everything durable (test/unit/broker/reactor/handlers/state-round-trip.test.ts, and the reactor's
// taking back of steps whose commit failed).

import type { ClusterState } from "../../src/broker/state/cluster-state.ts";
import type { JobEntry } from "../../src/broker/state/job-entry.ts";

const sorted = (values: Iterable<number | string>) => [...values].sort();

/** What the store must hold of the state: everything but soft state. */
export function durable(state: ClusterState) {
  const jobs = [...state.jobs.values()]
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map((job: JobEntry) => ({
      record: job.record,
      tasks: job.tasks,
      attempts: [...job.attempts.entries()].sort(([a], [b]) => a - b),
      counts: job.counts,
      qosPriority: job.qosPriority,
      pending: sorted(job.pending),
      ready: sorted(job.ready),
      liveTasks: job.liveTasks,
      checkpoints: job.tasks.map((task) =>
        [...job.checkpointsOf(task.index).parts].sort(
          (a, b) => a.rank - b.rank || a.generation - b.generation,
        ),
      ),
    }));
  const hosts = [...state.hosts.values()]
    .sort((a, b) => (a.record.name < b.record.name ? -1 : 1))
    .map(
      ({
        // The record whole: the lease and facts of the moment are soft state, beside it.
        record,
        usedSlots,
        usedMemoryMb,
        usedGpus,
        usedCustom,
        active,
      }) => ({
        record,
        usedSlots,
        usedMemoryMb,
        usedGpus: sorted(usedGpus),
        usedCustom: [...usedCustom].filter(([, units]) => units !== 0).sort(),
        active: sorted(active.keys()),
      }),
    );
  return {
    jobs,
    ended: [...state.ended.values()].sort((a, b) => (a.id < b.id ? -1 : 1)),
    hosts,
    live: sorted(state.live.keys()),
    liveJobs: liveJobsOf(state),
    tokens: state.tokens.list(),
    workflows: [...state.workflows.values()].sort((a, b) => (a.id < b.id ? -1 : 1)),
    meta: [...state.meta].sort(),
  };
}

/** The running jobs' index (ClusterState.liveJobs), each job with its count of live attempts. */
export function liveJobsOf(state: ClusterState): string[] {
  return [...state.liveJobs].map(([job, count]) => `${job.id}: ${count}`).sort();
}
