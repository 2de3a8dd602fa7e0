// The real trace, LCG-2005-1, submitted job by job in trace order by 8 clients (32 in the fast one), its submit times
// compressed to a steady rate a second and its run times capped to nothing (`true`), in two setups:
// - `replay-lcg-real`: on real local processes, `steward up --agents 1 --slots 4`: the first
//   20,000 jobs (STEWARD_BENCH_LCG_JOBS=N for another number, `all` for all 188,041, those without
//   a run time too: about 26 minutes) at 120 a second (below the end-to-end throughput, so the
//   queue does not grow without bound; STEWARD_BENCH_LCG_RATE for another).
// - `replay-lcg-1000`: all 188,041 jobs at 1,000 a second on one broker (`steward up --agents 0`)
//   with 100 simulated hosts of 100 slots over real WebSockets (simulated-hosts.ts: every start
//   answered at once with its started and ended reports): whether the broker keeps up, that is how
//   long after the last submit the last job ends (`drainSeconds`, target 10 s), and scheduling
//   latency with a slot free (p99 target 10 ms). STEWARD_BENCH_LCG_FAST_JOBS=N for fewer jobs.
// Figures: every job's end, the broker's RSS at 10 % of the submissions and at the end, its CPU,
// submit latency (p50/p99 of the requests), and scheduling latency (p50/p99 of an attempt's start
// after its job was accepted: the attempt record is made when the task is placed, read from the
// store), in all and counting only the time a slot was free for the job (slot-free-wait.ts:
// waiting for a busy slot is capacity, not the scheduler). RSS is also sampled at every tenth of
// the submissions.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { Api } from "./api.ts";
import { type Benchmark, percentile, pollUntil, REPOSITORY, round } from "./benchmark.ts";
import { readTrace } from "./replay-lcg.ts";
import {
  checkOpenFiles,
  connectHosts,
  disconnectHosts,
  newCounts,
  residentMb,
  type SimulatedHost,
} from "./simulated-hosts.ts";
import { waitsWithSlotFree } from "./slot-free-wait.ts";
import { metricIn, startSteward } from "./steward-process.ts";

const TRACE = process.env.STEWARD_LCG_TRACE ?? join(REPOSITORY, "bench/workloads/LCG-2005-1.swf.gz");
const JOBS =
  process.env.STEWARD_BENCH_LCG_JOBS === "all"
    ? Number.POSITIVE_INFINITY
    : Number(process.env.STEWARD_BENCH_LCG_JOBS ?? 20_000);
/**
 * Submissions a second on real processes: the trace's order, compressed to this pace
 * (STEWARD_BENCH_LCG_RATE for another: a machine whose processes start slowly runs fewer `true`
 * jobs a second than 120).
 */
const RATE = Number(process.env.STEWARD_BENCH_LCG_RATE ?? 120);
if (!(RATE > 0))
  throw new Error(`STEWARD_BENCH_LCG_RATE=${process.env.STEWARD_BENCH_LCG_RATE}: expected a positive number`);
const FAST_JOBS = Number(process.env.STEWARD_BENCH_LCG_FAST_JOBS ?? Number.POSITIVE_INFINITY);
const FAST_RATE = 1000;
const FAST_HOSTS = 100;
const FAST_SLOTS = 100;
/** The targets of the fast replay: the last job ends this soon after the last submit, and p99 of scheduling with a slot free. */
const FAST_DRAIN_TARGET_SECONDS = 10;
const FAST_SLOT_FREE_P99_TARGET_MS = 10;
/** Clients of the replay on real processes; the fast one has more, so that answers under load do not hold the pace back. */
const CLIENTS = 8;
const FAST_CLIENTS = 32;
/** How long the broker idles after the last job before its memory is read "at rest". */
const REST_MS = 20_000;

/** The broker's V8 heap (used and total, MB) from its /metrics. */
async function heapMb(api: Api) {
  const text = await api.metrics();
  const read = (name: string) => {
    const bytes = metricIn(text, name);
    return bytes === null ? null : round(bytes / 1048576, 1);
  };
  const spaces: Record<string, number> = {};
  for (const match of text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\} (\S+)$/gm))
    spaces[match[1]] = round(Number(match[2]) / 1048576, 1);
  return { used: read("nodejs_heap_size_used_bytes"), total: read("nodejs_heap_size_total_bytes"), spaces };
}

function rssMb(pid: number): number | null {
  const mb = residentMb(pid);
  return mb === null ? null : round(mb, 1);
}

/** Where the jobs run: real processes on local agents, or simulated hosts over WebSockets. */
interface ReplaySetup {
  label: string;
  jobs: number;
  rate: number;
  /** Local agents' slots (1 agent), or none with simulated hosts. */
  localSlots: number;
  simulated: { hosts: number; slots: number } | null;
  /** Clients submitting at once (each waits for its answer before its next job). */
  clients: number;
}

async function replay(setup: ReplaySetup, { options, progress }: Parameters<Benchmark["run"]>[0]) {
  const { label, rate } = setup;
  const trace = readTrace(TRACE, setup.jobs, true);
  const simulated = setup.simulated;
  if (simulated) checkOpenFiles("self", simulated.hosts, "this process");
  const steward = await startSteward({
    label,
    agents: simulated ? 0 : 1,
    slots: Math.max(1, setup.localSlots),
    keep: options.keep,
  });
  let hosts: SimulatedHost[] = [];
  const slots = simulated ? simulated.hosts * simulated.slots : setup.localSlots;
  try {
    if (simulated) {
      const joinToken = readFileSync(join(steward.dataDir, "join-token"), "utf8").trim();
      hosts = await connectHosts(simulated.hosts, "lcg", {
        url: steward.url,
        joinToken,
        slots: simulated.slots,
        counts: newCounts(),
      });
    }
    const cpuBefore = steward.cpuSeconds();
    const started = performance.now();
    const latencies: number[] = [];
    let next = 0;
    let rssAt10: number | null = null;
    const rssSamples: (number | null)[] = [];
    const tenth = Math.max(1, Math.floor(trace.length / 10));
    const client = async () => {
      for (;;) {
        const index = next++;
        if (index >= trace.length) return;
        // Paced: job i goes at i / rate seconds into the run.
        const due = started + (index / rate) * 1000;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((done) => setTimeout(done, wait));
        const t0 = performance.now();
        await steward.api.submit({ name: `lcg-${index}`, command: ["true"] });
        latencies.push(performance.now() - t0);
        if (index === tenth) rssAt10 = rssMb(steward.pid);
        if (index > 0 && index % tenth === 0) rssSamples.push(rssMb(steward.pid));
        if (index > 0 && index % 10_000 === 0) progress(`${label}: ${index} of ${trace.length} submitted`);
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
    const submittedSeconds = (performance.now() - started) / 1000;
    await pollUntil(
      `${label}: every job ended`,
      async () => {
        const pending = (await steward.api.request<unknown[]>("GET", "/api/v1/jobs?limit=1")).body;
        return Array.isArray(pending) && pending.length === 0 ? true : undefined;
      },
      { intervalMs: simulated ? 100 : 500, timeoutMs: 60 * 60_000 },
    );
    const seconds = (performance.now() - started) / 1000;
    const cpuAfter = steward.cpuSeconds();
    const rssAtEnd = rssMb(steward.pid);
    // And once it has been idle a while (V8's memory reducer gives back heap it no longer needs).
    await new Promise((done) => setTimeout(done, REST_MS));
    const rssAtRest = rssMb(steward.pid);
    const heap = await heapMb(steward.api);
    // Scheduling latency and the outcome of every job, from the store (a WAL reader beside the server).
    const db = new DatabaseSync(join(steward.dataDir, "steward.db"), { readOnly: true });
    let schedulingMs: number[];
    let slotFreeMs: number[];
    let states: Record<string, number>;
    try {
      schedulingMs = (
        db
          .prepare(
            "SELECT a.started_at - j.created_at AS ms FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE a.number = 1",
          )
          .all() as { ms: number }[]
      )
        .map((row) => Number(row.ms))
        .sort((a, b) => a - b);
      const times = db
        .prepare(
          "SELECT j.created_at AS c, a.started_at AS s, a.ended_at AS e FROM jobs j JOIN attempts a ON a.job_id = j.id AND a.task_index = 0 AND a.number = 1 ORDER BY j.created_at, length(j.id), j.id",
        )
        .all() as { c: number; s: number; e: number | null }[];
      slotFreeMs = waitsWithSlotFree(
        times.map((row) => ({
          createdAt: Number(row.c),
          startedAt: Number(row.s),
          endedAt: row.e === null ? null : Number(row.e),
        })),
        slots,
      ).sort((a, b) => a - b);
      states = Object.fromEntries(
        (
          db.prepare("SELECT state, count(*) AS n FROM jobs GROUP BY state").all() as {
            state: string;
            n: number;
          }[]
        ).map((row) => [row.state, Number(row.n)]),
      );
    } finally {
      db.close();
    }
    latencies.sort((a, b) => a - b);
    const figures = {
      jobs: trace.length,
      submitRatePerSecond: rate,
      ...(simulated ? { simulatedHosts: simulated.hosts, slotsPerHost: simulated.slots } : {}),
      submittedSeconds: round(submittedSeconds, 1),
      seconds: round(seconds, 1),
      drainSeconds: round(seconds - submittedSeconds, 1),
      states,
      rssMb: {
        atTenthOfSubmissions: rssAt10,
        atEnd: rssAtEnd,
        endOverTenth: rssAt10 && rssAtEnd ? round(rssAtEnd / rssAt10, 2) : null,
        atRest: rssAtRest,
        restOverTenth: rssAt10 && rssAtRest ? round(rssAtRest / rssAt10, 2) : null,
        heapAtRest: heap,
        everyTenth: rssSamples,
      },
      cpuSeconds:
        cpuBefore && cpuAfter
          ? round(cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system, 1)
          : null,
      submitLatencyMs: {
        p50: round(percentile(latencies, 0.5), 2),
        p99: round(percentile(latencies, 0.99), 2),
      },
      schedulingLatencyMs: {
        p50: round(percentile(schedulingMs, 0.5), 1),
        p99: round(percentile(schedulingMs, 0.99), 1),
      },
      schedulingLatencyWithSlotFreeMs: {
        p50: round(percentile(slotFreeMs, 0.5), 1),
        p99: round(percentile(slotFreeMs, 0.99), 1),
        max: round(slotFreeMs[slotFreeMs.length - 1] ?? Number.NaN, 1),
      },
    };
    progress(
      `${label}: ${trace.length} jobs in ${figures.seconds} s (drained ${figures.drainSeconds} s after the last submit) (${JSON.stringify(states)}); RSS ${rssAt10} -> ${rssAtEnd} MB; submit p99 ${figures.submitLatencyMs.p99} ms; scheduling p50 ${figures.schedulingLatencyMs.p50} ms, p99 ${figures.schedulingLatencyMs.p99} ms; with a slot free p50 ${figures.schedulingLatencyWithSlotFreeMs.p50} ms, p99 ${figures.schedulingLatencyWithSlotFreeMs.p99} ms`,
    );
    return figures;
  } finally {
    disconnectHosts(hosts);
    await steward.stop();
  }
}

export const replayLcgRealBenchmark: Benchmark = {
  name: "replay-lcg-real",
  description: `LCG-2005-1 on real local processes (1 agent, 4 slots): ${Number.isFinite(JOBS) ? JOBS : "all"} jobs submitted in trace order at ${RATE}/s, run times capped to \`true\`: RSS, CPU, submit and scheduling latency`,
  async run(context) {
    const figures = await replay(
      { label: "replay-lcg-real", jobs: JOBS, rate: RATE, localSlots: 4, simulated: null, clients: CLIENTS },
      context,
    );
    return { replayLcgReal: figures };
  },
};

export const replayLcgFastBenchmark: Benchmark = {
  name: "replay-lcg-1000",
  description: `LCG-2005-1, ${Number.isFinite(FAST_JOBS) ? FAST_JOBS : "all 188,041"} jobs submitted at ${FAST_RATE}/s to one broker with ${FAST_HOSTS} simulated hosts of ${FAST_SLOTS} slots: drain after the last submit, scheduling latency with a slot free`,
  async run(context) {
    const figures = await replay(
      {
        label: "replay-lcg-1000",
        jobs: FAST_JOBS,
        rate: FAST_RATE,
        localSlots: 0,
        simulated: { hosts: FAST_HOSTS, slots: FAST_SLOTS },
        clients: FAST_CLIENTS,
      },
      context,
    );
    return {
      replayLcgFast: {
        ...figures,
        targets: { drainSeconds: FAST_DRAIN_TARGET_SECONDS, slotFreeP99Ms: FAST_SLOT_FREE_P99_TARGET_MS },
      },
    };
  },
};
