// Crash to restart: a host dies under a running job; how long until the job runs again elsewhere?
// A server and three agents as separate processes (heartbeat 1 s, host timeout 3 s); five times:
// submit `sleep 30`, wait until its attempt runs, kill -9 that attempt's agent with everything
// below it, and time until the task's next attempt is `running` on another host. Then the job is
// cancelled and the crashed agent comes back (same name, same work folder) for the next run.

import type { AttemptView, JobDetail } from "./api.ts";
import { type Benchmark, median, pollUntil, round, since } from "./benchmark.ts";
import { startCluster } from "./steward-cluster.ts";

const RUNS = 5;
const AGENTS = 3;
const SLOTS = 2;
const HEARTBEAT_SECONDS = 1;
const HOST_TIMEOUT_SECONDS = 3;
const POLL_MS = 50;
const RESTART_TIMEOUT_MS = 30_000;
const ENDED = new Set(["succeeded", "failed", "cancelled"]);

function lastAttempt(job: JobDetail): AttemptView | undefined {
  return job.tasks[0]?.attempts.at(-1);
}

export const crashRestartBenchmark: Benchmark = {
  name: "crash-restart",
  description: `kill -9 of a running job's host (${AGENTS} agents, heartbeat ${HEARTBEAT_SECONDS} s, host timeout ${HOST_TIMEOUT_SECONDS} s) to its next attempt running, ${RUNS} runs`,
  async run({ options, progress }) {
    const cluster = await startCluster({
      label: "crash-restart",
      agents: AGENTS,
      slots: SLOTS,
      serverArgs: [
        "--heartbeat-seconds",
        String(HEARTBEAT_SECONDS),
        "--host-timeout-seconds",
        String(HOST_TIMEOUT_SECONDS),
      ],
      agentArgs: ["--speed", "1"],
      cpuProf: options.cpuProf,
      keep: options.keep,
    });
    try {
      const { api } = cluster;
      const runs: number[] = [];
      const lostSeconds: number[] = [];
      const placedSeconds: number[] = [];
      const agentBackSeconds: number[] = [];
      for (let run = 1; run <= RUNS; run++) {
        const id = await api.submit({ name: `bench-crash-${run}`, command: "sleep 30" });
        const first = await pollUntil(
          `crash-restart: job ${id} running`,
          async () => {
            const attempt = lastAttempt(await api.jobDetail(id));
            return attempt?.state === "running" ? attempt : undefined;
          },
          { intervalMs: POLL_MS, timeoutMs: RESTART_TIMEOUT_MS },
        );
        const agent = cluster.agent(first.host);
        const killed = await agent.crash();
        const start = performance.now();
        const marks: { lostMs: number | null; placedMs: number | null } = { lostMs: null, placedMs: null };
        const next = await pollUntil(
          `crash-restart: job ${id} restarted after the crash of ${agent.name}`,
          async () => {
            const job = await api.jobDetail(id);
            const attempts = job.tasks[0].attempts;
            const elapsed = since(start);
            if (marks.lostMs === null && attempts.find((a) => a.number === first.number)?.state === "ended")
              marks.lostMs = elapsed;
            const after = attempts.find((a) => a.number > first.number);
            if (after && marks.placedMs === null) marks.placedMs = elapsed;
            return after?.state === "running" && after.host !== first.host ? after : undefined;
          },
          { intervalMs: POLL_MS, timeoutMs: RESTART_TIMEOUT_MS },
        );
        const seconds = since(start) / 1000;
        runs.push(seconds);
        if (marks.lostMs !== null) lostSeconds.push(round(marks.lostMs / 1000, 3));
        if (marks.placedMs !== null) placedSeconds.push(round(marks.placedMs / 1000, 3));
        const lost = (await api.jobDetail(id)).tasks[0].attempts.find((a) => a.number === first.number);
        progress(
          `crash-restart: run ${run}: killed ${agent.name} (${killed.length} processes); attempt ${first.number} ${lost?.outcome ?? lost?.state} (${lost?.reason ?? ""}), attempt ${next.number} running on ${next.host} after ${round(seconds, 3)} s`,
        );

        await api.control(id, "cancel");
        const backStart = performance.now();
        await agent.restart();
        await cluster.waitForHosts([agent.name]);
        agentBackSeconds.push(round(since(backStart) / 1000, 3));
        await pollUntil(
          `crash-restart: job ${id} cancelled`,
          async () => (ENDED.has((await api.job(id)).state) ? true : undefined),
          { intervalMs: POLL_MS, timeoutMs: RESTART_TIMEOUT_MS },
        );
      }
      return {
        faults: {
          crashToRestartSeconds: { median: round(median(runs), 3), runs: runs.map((s) => round(s, 3)) },
          crashToRestart: {
            // From the kill to the server ending the attempt `lost`, and to the next attempt's placement.
            hostLostSeconds: lostSeconds,
            nextAttemptPlacedSeconds: placedSeconds,
            // From the restarted agent's spawn to its host reading ready and connected again.
            agentBackSeconds,
            heartbeatSeconds: HEARTBEAT_SECONDS,
            hostTimeoutSeconds: HOST_TIMEOUT_SECONDS,
            agents: AGENTS,
            pollIntervalMs: POLL_MS,
          },
        },
      };
    } finally {
      await cluster.stop();
    }
  },
};
