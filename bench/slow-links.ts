// Slow and lossy links: what they cost the makespan. A `steward server` and 2 `steward agent`s as
// separate processes (steward-cluster.ts, the default heartbeat and host timeout), each agent
// reaching the server through a TCP forwarder of its own on loopback (test/helpers/tcp-forwarder.ts).
// The same array of short tasks runs three ways on that cluster, one after the other, each timed
// from the submit request to the job reading succeeded:
// - `noFault`: the forwarders pass every byte as it comes;
// - `delay`: 200 ms each way, and up to 100 ms more at random (in order, as TCP keeps it);
// - `resets`: every second every connection is reset, and new ones too for 100 ms.
// Each way also counts its attempts (more than one a task: a start or a report lost to a reset and
// made again) and the hosts seen lost, and checks that every task succeeded with one attempt
// succeeded, or the benchmark fails.

import { setTimeout as sleep } from "node:timers/promises";
import { PASS, RESET, startForwarder, type TcpForwarder } from "../test/helpers/tcp-forwarder.ts";
import type { JobSummary } from "./api.ts";
import { type Benchmark, round, since } from "./benchmark.ts";
import { type Cluster, startCluster } from "./steward-cluster.ts";

const TASKS = Number(process.env.STEWARD_BENCH_SLOW_LINKS_TASKS ?? 200);
const AGENTS = 2;
const SLOTS = 4;
/** Each task sleeps this long: short, but long enough that resets fall while tasks run. */
const TASK_SECONDS = 0.5;
const DELAY_MS = 200;
const JITTER_MS = 100;
const RESET_EVERY_MS = 1000;
const RESET_FOR_MS = 100;
const POLL_MS = 50;
const TIMEOUT_MS = 10 * 60_000;
const ENDED = new Set(["succeeded", "failed", "cancelled"]);

type Way = "noFault" | "delay" | "resets";

interface WayFigures {
  makespanSeconds: number;
  tasksPerSecond: number;
  /** Attempts in all (TASKS when nothing was made again). */
  attempts: number;
  /** Attempts that ended `lost` (a start or a host the link lost). */
  lostAttempts: number;
  /** Why they were lost: reason -> attempts. */
  lostReasons: Record<string, number>;
  /** Hosts seen `lost` while the array ran. */
  hostsLost: string[];
  /** Resets made (the `resets` way). */
  resets: number;
}

/** Runs the array once under the link `way` makes; its figures. */
async function runWay(cluster: Cluster, forwarders: TcpForwarder[], way: Way): Promise<WayFigures> {
  const { api } = cluster;
  for (const forwarder of forwarders)
    forwarder.setMode(way === "delay" ? { kind: "delay", ms: DELAY_MS, jitterMs: JITTER_MS } : PASS);
  let resets = 0;
  const resetting =
    way === "resets"
      ? setInterval(() => {
          resets++;
          for (const forwarder of forwarders) forwarder.setMode(RESET);
          setTimeout(() => {
            for (const forwarder of forwarders) forwarder.setMode(PASS);
          }, RESET_FOR_MS);
        }, RESET_EVERY_MS)
      : null;
  const hostsLost = new Set<string>();
  try {
    const start = performance.now();
    const id = await api.submit({
      name: `bench-slow-links-${way}`,
      command: ["sleep", String(TASK_SECONDS)],
      array: { count: TASKS },
    });
    let job: JobSummary;
    for (;;) {
      job = await api.job(id);
      for (const host of await api.hosts()) if (host.state === "lost") hostsLost.add(host.name);
      if (ENDED.has(job.state)) break;
      if (since(start) > TIMEOUT_MS) throw new Error(`slow-links: ${way}: job ${id} still ${job.state}`);
      await sleep(POLL_MS);
    }
    const makespanMs = since(start);
    const detail = await api.jobDetail(id);
    const attempts = detail.tasks.flatMap((task) => task.attempts);
    const lostReasons: Record<string, number> = {};
    for (const attempt of attempts)
      if (attempt.outcome === "lost") {
        const reason = attempt.reason ?? "none given";
        lostReasons[reason] = (lostReasons[reason] ?? 0) + 1;
      }
    const once = detail.tasks.every(
      (task) => task.attempts.filter((attempt) => attempt.outcome === "succeeded").length === 1,
    );
    if (job.state !== "succeeded" || !once)
      throw new Error(`slow-links: ${way}: job ${id} ${job.state}, not one success a task`);
    return {
      makespanSeconds: round(makespanMs / 1000, 3),
      tasksPerSecond: round(TASKS / (makespanMs / 1000), 1),
      attempts: attempts.length,
      lostAttempts: attempts.filter((attempt) => attempt.outcome === "lost").length,
      lostReasons,
      hostsLost: [...hostsLost],
      resets,
    };
  } finally {
    if (resetting) clearInterval(resetting);
    for (const forwarder of forwarders) forwarder.setMode(PASS);
  }
}

export const slowLinksBenchmark: Benchmark = {
  name: "slow-links",
  description: `makespan of ${TASKS} \`sleep ${TASK_SECONDS}\` tasks on ${AGENTS} agents of ${SLOTS} slots behind forwarders: no fault, ${DELAY_MS} ms delay + ${JITTER_MS} ms jitter, a reset every ${RESET_EVERY_MS / 1000} s`,
  async run({ options, progress }) {
    const forwarders: TcpForwarder[] = [];
    const cluster = await startCluster({
      label: "slow-links",
      agents: AGENTS,
      slots: SLOTS,
      agentArgs: ["--speed", "1"],
      cpuProf: options.cpuProf,
      keep: options.keep,
      async agentServer(serverUrl) {
        const { hostname, port } = new URL(serverUrl);
        const forwarder = await startForwarder({ target: { host: hostname, port: Number(port) } });
        forwarders.push(forwarder);
        return `http://${forwarder.host}:${forwarder.port}`;
      },
    });
    try {
      const figures: Partial<Record<Way, WayFigures>> = {};
      for (const way of ["noFault", "delay", "resets"] as const) {
        await cluster.waitForHosts();
        figures[way] = await runWay(cluster, forwarders, way);
        progress(`slow-links: ${way}: ${JSON.stringify(figures[way])}`);
      }
      const base = figures.noFault?.makespanSeconds ?? 0;
      const over = (way: Way) => (base > 0 ? round((figures[way]?.makespanSeconds ?? 0) / base, 2) : null);
      return {
        slowLinks: {
          ...figures,
          delayOverNoFault: over("delay"),
          resetsOverNoFault: over("resets"),
          tasks: TASKS,
          agents: AGENTS,
          slots: SLOTS,
          delayMs: DELAY_MS,
          jitterMs: JITTER_MS,
          resetEveryMs: RESET_EVERY_MS,
          resetForMs: RESET_FOR_MS,
          taskSeconds: TASK_SECONDS,
        },
      };
    } finally {
      await cluster.stop();
      for (const forwarder of forwarders) await forwarder.close();
    }
  },
};
