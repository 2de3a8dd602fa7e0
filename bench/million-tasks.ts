// A million-task array on one broker: 1,000 simulated hosts of 10 slots (simulated-hosts.ts: agent
// connections over real WebSockets, held by this process and speaking the agents' protocol; every
// start answered at once with started and ended reports, acknowledged by the server once
// committed). The broker is `steward up` with no local agents (SQLite, fsynced commits). Figures:
// `acceptSeconds`, the submit request of one array of 1,000,000 `true` tasks to its answer (the job
// durable); `allEndedSeconds`, from that answer to the job reading `succeeded` (every task placed,
// started and ended through the broker), and `tasksPerSecond` over it; `brokerCpuMsPerTask`, the
// broker's CPU (user + system, /proc/PID/stat) from the submit to the end, a task; `maxRssMb`, the
// most of the broker's VmRSS (/proc/PID/status) sampled every 100 ms from before the submit to the
// end. Targets (the issue "Performance, second pass"): accepted within 2 s, at least 20,000 tasks
// a second, under 1 GB.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Benchmark, pollUntil, round } from "./benchmark.ts";
import {
  checkOpenFiles,
  connectHosts,
  disconnectHosts,
  newCounts,
  REPORT_STARTS,
  residentMb,
  type SimulatedHost,
} from "./simulated-hosts.ts";
import { startSteward } from "./steward-process.ts";

const HOSTS = 1000;
const SLOTS = 10;
/** `STEWARD_BENCH_MILLION_TASKS` for another count (a shorter run while working on the broker). */
const TASKS = Number(process.env.STEWARD_BENCH_MILLION_TASKS ?? 1_000_000);
const RSS_SAMPLE_MS = 100;

export const millionTasksBenchmark: Benchmark = {
  name: "million-tasks",
  description: `one array of ${TASKS} tasks on ${HOSTS} simulated hosts of ${SLOTS} slots: accepted, placed and ended through the broker, its CPU and peak RSS`,
  async run({ options, progress }) {
    checkOpenFiles("self", HOSTS, "this process");
    const steward = await startSteward({
      label: "million",
      agents: 0,
      slots: 1,
      keep: options.keep,
      cpuProf: options.cpuProf,
    });
    let hosts: SimulatedHost[] = [];
    let sampler: NodeJS.Timeout | null = null;
    try {
      const joinToken = readFileSync(join(steward.dataDir, "join-token"), "utf8").trim();
      const counts = newCounts();
      hosts = await connectHosts(HOSTS, "sim", { url: steward.url, joinToken, slots: SLOTS, counts });
      await pollUntil(
        "million-tasks: every host ready",
        async () =>
          (await steward.api.hosts()).filter((host) => host.state === "ready").length === HOSTS
            ? true
            : undefined,
        { intervalMs: 200, timeoutMs: 60_000 },
      );
      const rssAtRest = residentMb(steward.pid) ?? 0;
      let maxRss = rssAtRest;
      sampler = setInterval(() => {
        maxRss = Math.max(maxRss, residentMb(steward.pid) ?? 0);
      }, RSS_SAMPLE_MS);
      progress(`million-tasks: ${HOSTS} hosts ready; broker RSS ${round(rssAtRest, 0)} MB`);

      const cpuBefore = steward.cpuSeconds();
      const submitted = performance.now();
      const id = await steward.api.submit({
        name: "bench-million",
        command: "true",
        array: { count: TASKS },
      });
      const accepted = performance.now();
      const acceptSeconds = round((accepted - submitted) / 1000, 2);
      progress(`million-tasks: ${TASKS} tasks accepted in ${acceptSeconds} s`);
      let lastReport = accepted;
      await pollUntil(
        "million-tasks: all succeeded",
        async () => {
          if (performance.now() - lastReport > 10_000) {
            lastReport = performance.now();
            progress(
              `million-tasks: ${counts.starts} started, ${counts.acks} reports acknowledged, broker RSS max ${round(maxRss, 0)} MB`,
            );
          }
          if (counts.starts < TASKS) return undefined;
          return (await steward.api.job(id)).state === "succeeded" ? true : undefined;
        },
        { intervalMs: 100, timeoutMs: 1_800_000 },
      );
      const ended = performance.now();
      const cpuAfter = steward.cpuSeconds();
      clearInterval(sampler);
      sampler = null;
      maxRss = Math.max(maxRss, residentMb(steward.pid) ?? 0);
      const allEndedSeconds = round((ended - accepted) / 1000, 2);
      const brokerCpuMsPerTask =
        cpuBefore && cpuAfter
          ? round(((cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) * 1000) / TASKS, 4)
          : null;
      const tasksPerSecond = round(TASKS / allEndedSeconds, 0);
      progress(
        `million-tasks: all ${TASKS} ended ${allEndedSeconds} s after acceptance (${tasksPerSecond} tasks/s), broker ${brokerCpuMsPerTask} CPU-ms a task, RSS max ${round(maxRss, 0)} MB`,
      );
      return {
        millionTasks: {
          hosts: HOSTS,
          slotsPerHost: SLOTS,
          tasks: TASKS,
          acceptSeconds,
          allEndedSeconds,
          tasksPerSecond,
          brokerCpuMsPerTask,
          rssMbAtRest: round(rssAtRest, 0),
          maxRssMb: round(maxRss, 0),
          rssSampleMs: RSS_SAMPLE_MS,
          reportsAcknowledged: counts.acks,
          /** Reports a host sends a task: its end (as an agent reports a job that ends at once), or its start too. */
          reportsPerTask: REPORT_STARTS ? 2 : 1,
        },
      };
    } finally {
      if (sampler) clearInterval(sampler);
      disconnectHosts(hosts);
      await steward.stop();
    }
  },
};
