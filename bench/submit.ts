// Submission throughput on a `steward up` with no agents, so nothing runs and the machine is left
// to the API and the store: single jobs one at a time and from 8 concurrent clients over keep-alive,
// then array jobs of 10,000 and 100,000 tasks. Every job requires a host that does not exist.

import { type Benchmark, median, percentile, round, since } from "./benchmark.ts";
import { type Steward, startSteward } from "./steward-process.ts";

const NEVER = 'host.name == "nowhere"';
const WARM_UP = 50;
const SEQUENTIAL = 500;
const CLIENTS = 8;
/**
 * Submits from 8 clients right after the sequential ones: the broker's code is not yet optimised
 * (Node compiles a function hot enough in tiers), so these cost it up to twice the CPU a request
 * of a warm broker. Printed as `concurrent8Cold`. (postgres.ts sends its submits the same way.)
 */
export const COLD = 1000;
/** More submits from 8 clients, not timed, before the broker's throughput is measured. */
export const CONCURRENT_WARM_UP = 3000;
/** Submits from 8 clients timed for `concurrent8`: long enough to hold a few collections of the heap. */
export const CONCURRENT = 10_000;
/** Array submissions timed; the median counts. */
const BULK_RUNS = 3;

const singleJob = { name: "bench-single", command: "true", requirements: NEVER };

interface Rate {
  requests: number;
  /** Store commits (fsynced transactions) made meanwhile: fewer than requests when group commit batches. */
  storeCommits: number | null;
  seconds: number;
  requestsPerSecond: number;
  /** CPU time (user + system, ms) of the `steward up` process a request: its threads, no agent runs. */
  brokerCpuMs: number | null;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
}

/** Seconds to accept one array job of `count` tasks (median of BULK_RUNS), checked by its task count. */
async function timeBulk(steward: Steward, count: number, progress: (message: string) => void) {
  const { api } = steward;
  const runs: number[] = [];
  for (let i = 0; i < BULK_RUNS; i++) {
    const start = performance.now();
    const id = await api.submit({
      name: "bench-bulk",
      command: "true",
      requirements: NEVER,
      array: { count },
    });
    runs.push(since(start) / 1000);
    const bulk = await api.job(id);
    const total = Object.values(bulk.counts).reduce((sum, n) => sum + n, 0);
    if (total !== count) throw new Error(`array job ${id} has ${total} tasks, not ${count}`);
  }
  const seconds = median(runs);
  progress(`submit: array of ${count} accepted in ${runs.map((x) => round(x, 3)).join(", ")} s`);
  return {
    tasks: count,
    seconds: round(seconds, 4),
    runsSeconds: runs.map((x) => round(x, 4)),
    tasksPerSecond: round(count / seconds),
  };
}

/** `total` submissions spread over `clients` loops that each send one request at a time. */
async function submitMany(steward: Steward, total: number, clients: number): Promise<Rate> {
  const { api } = steward;
  const commitsBefore = await steward.metric("steward_store_commits");
  const latencies: number[] = [];
  const cpuBefore = steward.cpuSeconds();
  let next = 0;
  const client = async () => {
    while (next < total) {
      next++;
      const start = performance.now();
      await api.submit(singleJob);
      latencies.push(since(start));
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: clients }, client));
  const seconds = since(start) / 1000;
  const cpuAfter = steward.cpuSeconds();
  latencies.sort((a, b) => a - b);
  const commitsAfter = await steward.metric("steward_store_commits");
  return {
    requests: total,
    storeCommits: commitsBefore !== null && commitsAfter !== null ? commitsAfter - commitsBefore : null,
    seconds: round(seconds, 3),
    requestsPerSecond: round(total / seconds),
    brokerCpuMs:
      cpuBefore && cpuAfter
        ? round(((cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) * 1000) / total, 3)
        : null,
    latencyMs: {
      p50: round(percentile(latencies, 0.5), 2),
      p90: round(percentile(latencies, 0.9), 2),
      p99: round(percentile(latencies, 0.99), 2),
      max: round(latencies[latencies.length - 1], 2),
    },
  };
}

export const submitBenchmark: Benchmark = {
  name: "submit",
  description: `single submissions (${SEQUENTIAL} sequential, ${COLD} then ${CONCURRENT} from ${CLIENTS} clients) and arrays of 10,000 and 100,000 tasks (median of ${BULK_RUNS}), 0 agents`,
  async run({ options, progress }) {
    const steward = await startSteward({
      label: "submit",
      agents: 0,
      slots: 1,
      cpuProf: options.cpuProf,
      keep: options.keep,
    });
    try {
      await submitMany(steward, WARM_UP, 1);
      progress(`submit: warmed up with ${WARM_UP} submissions`);

      const sequential = await submitMany(steward, SEQUENTIAL, 1);
      progress(
        `submit: sequential ${sequential.requestsPerSecond}/s (p50 ${sequential.latencyMs.p50} ms, ` +
          `broker ${sequential.brokerCpuMs} ms CPU a request)`,
      );

      const cold = await submitMany(steward, COLD, CLIENTS);
      progress(
        `submit: the first ${COLD} from ${CLIENTS} clients ${cold.requestsPerSecond}/s ` +
          `(broker ${cold.brokerCpuMs} ms CPU a request)`,
      );
      await submitMany(steward, CONCURRENT_WARM_UP, CLIENTS);
      const concurrent = await submitMany(steward, CONCURRENT, CLIENTS);
      progress(
        `submit: ${CLIENTS} clients ${concurrent.requestsPerSecond}/s over ${CONCURRENT} after ` +
          `${COLD + CONCURRENT_WARM_UP} (p50 ${concurrent.latencyMs.p50} ms, broker ${concurrent.brokerCpuMs} ms CPU a request)`,
      );

      const bulkArray10k = await timeBulk(steward, 10_000, progress);
      const bulkArray100k = await timeBulk(steward, 100_000, progress);

      return {
        submit: {
          singleRequestsPerSecond: {
            sequential: sequential.requestsPerSecond,
            concurrent8: concurrent.requestsPerSecond,
            concurrent8Cold: cold.requestsPerSecond,
          },
          single: { sequential, concurrent8: concurrent, concurrent8Cold: cold },
          bulkArray10k,
          bulkArray100k,
        },
      };
    } finally {
      await steward.stop();
    }
  },
};
