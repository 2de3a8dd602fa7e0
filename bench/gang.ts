// Multi-node jobs: how long a gang takes to start (submit to every rank running) for 2, 4 and 8
// ranks, and how long after a rank's host dies the gang runs again. Local agents of one slot each
// (heartbeat 1 s, host timeout 3 s); the crash run uses a 3-rank gang on 4 agents, so the rank of
// the dead host is replaced on the fourth while the other two go back to their hosts.

import type { AttemptView } from "./api.ts";
import { type Benchmark, median, pollUntil, round, since } from "./benchmark.ts";
import { startCluster } from "./steward-cluster.ts";

const AGENTS = 8;
const SIZES = [2, 4, 8];
const RUNS = 3;
const CRASH_RANKS = 3;
const HEARTBEAT_SECONDS = 1;
const HOST_TIMEOUT_SECONDS = 3;
const POLL_MS = 20;
const TIMEOUT_MS = 60_000;

export const gangBenchmark: Benchmark = {
  name: "gang",
  description: `multi-node jobs: submit to all ranks running for ${SIZES.join(", ")} ranks (${RUNS} runs each, ${AGENTS} agents), and a rank's host crash to the gang running again`,
  async run({ options, progress }) {
    const cluster = await startCluster({
      label: "gang",
      agents: AGENTS,
      slots: 1,
      serverArgs: [
        "--heartbeat-seconds",
        String(HEARTBEAT_SECONDS),
        "--host-timeout-seconds",
        String(HOST_TIMEOUT_SECONDS),
      ],
      agentArgs: ["--speed", "1", "--address", "127.0.0.1"],
      cpuProf: options.cpuProf,
      keep: options.keep,
    });
    try {
      const { api } = cluster;
      const attemptOf = async (id: string, number: number): Promise<AttemptView | undefined> =>
        (await api.jobDetail(id)).tasks[0]?.attempts.find((attempt) => attempt.number === number);
      const startSeconds: Record<string, { median: number; runs: number[] }> = {};
      for (const nodes of SIZES) {
        const runs: number[] = [];
        for (let run = 1; run <= RUNS; run++) {
          const start = performance.now();
          const id = await api.submit({ name: `bench-gang-${nodes}-${run}`, command: "sleep 0.5", nodes });
          await pollUntil(
            `gang: ${nodes} ranks running`,
            async () => ((await attemptOf(id, 1))?.state === "running" ? true : undefined),
            { intervalMs: POLL_MS, timeoutMs: TIMEOUT_MS },
          );
          runs.push(round(since(start) / 1000, 3));
          await pollUntil(
            `gang: job ${id} ended`,
            async () => ((await api.job(id)).state === "succeeded" ? true : undefined),
            { intervalMs: POLL_MS, timeoutMs: TIMEOUT_MS },
          );
        }
        startSeconds[String(nodes)] = { median: round(median(runs), 3), runs };
        progress(`gang: ${nodes} ranks running ${round(median(runs), 3)} s after submit (median of ${RUNS})`);
      }

      // A rank's host dies: every rank stopped, the dead one replaced, the gang running again.
      const id = await api.submit({ name: "bench-gang-crash", command: "sleep 60", nodes: CRASH_RANKS });
      const first = await pollUntil(
        "gang: crash run running",
        async () => {
          const attempt = await attemptOf(id, 1);
          return attempt?.state === "running" ? attempt : undefined;
        },
        { intervalMs: POLL_MS, timeoutMs: TIMEOUT_MS },
      );
      const victim = (first as AttemptView & { placement: { host: string }[] }).placement[1].host;
      await cluster.agent(victim).crash();
      const crashed = performance.now();
      await pollUntil(
        "gang: running again after the crash",
        async () => ((await attemptOf(id, 2))?.state === "running" ? true : undefined),
        { intervalMs: POLL_MS, timeoutMs: TIMEOUT_MS },
      );
      const crashToRunning = round(since(crashed) / 1000, 3);
      progress(`gang: rank 1's host ${victim} crashed; the gang ran again after ${crashToRunning} s`);
      await api.control(id, "cancel");
      return {
        gang: {
          startSeconds,
          crashToRunningSeconds: crashToRunning,
          crashRanks: CRASH_RANKS,
          heartbeatSeconds: HEARTBEAT_SECONDS,
          hostTimeoutSeconds: HOST_TIMEOUT_SECONDS,
        },
      };
    } finally {
      await cluster.stop();
    }
  },
};
