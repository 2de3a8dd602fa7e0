// Many hosts on one broker: agent connections over real WebSockets, held by this process and
// speaking the agents' protocol (simulated-hosts.ts: hello, heartbeats at the interval the welcome
// gives, the default 2 s; started and ended reports for every start, acknowledged by the server
// once committed). Two sizes, each on a fresh broker: 1,000 hosts with 10,000 tasks, and 10,000
// hosts with 100,000 tasks (10 slots a host, so every task has a slot). Figures: the broker's CPU
// for the heartbeats alone (as a fraction of one core, over 30 s), and the time to place and finish
// the tasks of one array across the hosts (submit to all started, and to all succeeded), with the
// broker's CPU a task. The broker is `steward up` with no local agents (SQLite, fsynced commits).
// This process holds every connection: its own CPU competes with the broker's on a small machine
// (`benchCpuFraction`).

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Benchmark, type BenchOptions, type Figures, pollUntil, round } from "./benchmark.ts";
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

const SLOTS = 10;
const IDLE_SECONDS = 30;
const HEARTBEAT_SECONDS = 2;

interface Size {
  hosts: number;
  tasks: number;
}

const SIZES: Size[] = [
  { hosts: 1000, tasks: 10_000 },
  { hosts: 10_000, tasks: 100_000 },
];

async function run(size: Size, options: BenchOptions, progress: (message: string) => void): Promise<Figures> {
  const { hosts: HOSTS, tasks: TASKS } = size;
  const label = `hosts-${HOSTS}`;
  checkOpenFiles("self", HOSTS, "this process");
  const steward = await startSteward({
    label,
    agents: 0,
    slots: 1,
    keep: options.keep,
    cpuProf: options.cpuProf,
  });
  let hosts: SimulatedHost[] = [];
  try {
    checkOpenFiles(steward.pid, HOSTS, "the broker");
    const joinToken = readFileSync(join(steward.dataDir, "join-token"), "utf8").trim();
    const counts = newCounts();
    const connectStart = performance.now();
    hosts = await connectHosts(HOSTS, "sim", { url: steward.url, joinToken, slots: SLOTS, counts });
    const connectSeconds = round((performance.now() - connectStart) / 1000, 2);
    progress(`${label}: ${HOSTS} hosts joined in ${connectSeconds} s`);
    await pollUntil(
      `${label}: every host ready`,
      async () =>
        (await steward.api.hosts()).filter((host) => host.state === "ready").length === HOSTS
          ? true
          : undefined,
      { intervalMs: 500, timeoutMs: 120_000 },
    );
    // Heartbeats alone.
    await new Promise((done) => setTimeout(done, 2 * HEARTBEAT_SECONDS * 1000));
    const before = steward.cpuSeconds();
    const benchBefore = process.cpuUsage();
    const heartbeatsBefore = counts.heartbeats;
    const idleStart = performance.now();
    await new Promise((done) => setTimeout(done, IDLE_SECONDS * 1000));
    const after = steward.cpuSeconds();
    const wall = (performance.now() - idleStart) / 1000;
    const benchUsed = process.cpuUsage(benchBefore);
    const heartbeatCpu =
      before && after ? round((after.user + after.system - before.user - before.system) / wall, 3) : null;
    const heartbeatsPerSecond = round((counts.heartbeats - heartbeatsBefore) / wall, 0);
    progress(
      `${label}: heartbeats of ${HOSTS} hosts (${heartbeatsPerSecond}/s) cost the broker ${heartbeatCpu} of one core (over ${round(wall, 1)} s)`,
    );

    // One array of TASKS tasks.
    const cpuBefore = steward.cpuSeconds();
    const submitted = performance.now();
    const id = await steward.api.submit({ name: `bench-${label}`, command: "true", array: { count: TASKS } });
    await pollUntil(`${label}: all started`, async () => (counts.starts >= TASKS ? true : undefined), {
      intervalMs: 20,
      timeoutMs: 120_000,
    });
    const allStartedSeconds = round((performance.now() - submitted) / 1000, 2);
    await pollUntil(
      `${label}: all succeeded`,
      async () => ((await steward.api.job(id)).state === "succeeded" ? true : undefined),
      { intervalMs: 100, timeoutMs: 600_000 },
    );
    const allSucceededSeconds = round((performance.now() - submitted) / 1000, 2);
    const cpuAfter = steward.cpuSeconds();
    const brokerCpuMsPerTask =
      cpuBefore && cpuAfter
        ? round(((cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) * 1000) / TASKS, 3)
        : null;
    progress(
      `${label}: ${TASKS} tasks all started ${allStartedSeconds} s after submit, all succeeded after ${allSucceededSeconds} s, broker ${brokerCpuMsPerTask} CPU-ms a task`,
    );
    return {
      hosts: HOSTS,
      slotsPerHost: SLOTS,
      connectSeconds,
      heartbeatCpuFraction: heartbeatCpu,
      heartbeatSeconds: HEARTBEAT_SECONDS,
      heartbeatsPerSecond,
      benchCpuFraction: round((benchUsed.user + benchUsed.system) / 1e6 / wall, 3),
      tasks: TASKS,
      allStartedSeconds,
      allSucceededSeconds,
      tasksPerSecond: round(TASKS / allSucceededSeconds, 1),
      brokerCpuMsPerTask,
      brokerRssMb: round(residentMb(steward.pid) ?? Number.NaN, 0),
      /** Reports a host sends a task: its end (as an agent reports a job that ends at once), or its start too. */
      reportsPerTask: REPORT_STARTS ? 2 : 1,
    };
  } finally {
    disconnectHosts(hosts);
    await steward.stop();
  }
}

export const manyHostsBenchmark: Benchmark = {
  name: "many-hosts",
  description: `${SIZES.map((size) => `${size.hosts} agents over real WebSockets with ${size.tasks} tasks`).join(", then ")} (heartbeat 2 s): the broker's CPU for heartbeats, and the tasks placed across them`,
  async run({ options, progress }) {
    const only = process.env.STEWARD_BENCH_HOSTS;
    const sizes = only ? SIZES.filter((size) => String(size.hosts) === only) : SIZES;
    const figures: Figures = {};
    for (const size of sizes) {
      const measured = await run(size, options, progress);
      // The 1,000-host figures keep their names of before; the larger sizes go under their own.
      if (size.hosts === 1000) Object.assign(figures, measured);
      else figures[`hosts${size.hosts}`] = measured;
    }
    return { manyHosts: figures };
  },
};
