// 1,000 hosts on one broker: 1,000 agent connections over real WebSockets, held by this process
// and speaking the agents' protocol (hello, heartbeats at the interval the welcome gives, the
// default 2 s; started and ended reports for every start, acknowledged by the server). Figures:
// the broker's CPU for the heartbeats alone (as a fraction of one core, over 30 s), and the time
// to place and finish 10,000 one-slot tasks across the hosts (submit to all started, and to all
// succeeded). The broker is `steward up` with no local agents (SQLite, fsynced commits).

import { readFileSync } from "node:fs";
import { join } from "node:path";
import WebSocket from "ws";
import { AGENT_CONNECT_PATH, PROTOCOL_VERSION } from "../src/common/protocol/messages.ts";
import { type Benchmark, pollUntil, round } from "./benchmark.ts";
import { startSteward } from "./steward-process.ts";

const HOSTS = 1000;
const SLOTS = 10;
const TASKS = 10_000;
const IDLE_SECONDS = 30;

interface SimulatedHost {
  ws: WebSocket;
  started: number;
}

function facts(name: string) {
  return {
    name,
    pool: "default",
    os: "linux",
    arch: "x64",
    cpus: SLOTS,
    memoryMb: 16_384,
    memFreeMb: 8192,
    load1: 0.1,
    cpuFree: SLOTS,
    diskFreeMb: 100_000,
    speed: 1,
    labels: {},
    slotsFree: SLOTS,
  };
}

/** One host: hello, heartbeats, and every start answered with started then ended (succeeded). */
function connect(
  url: string,
  name: string,
  joinToken: string,
  counts: { started: number; ended: number },
): Promise<SimulatedHost> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, "ws") + AGENT_CONNECT_PATH);
    const host: SimulatedHost = { ws, started: 0 };
    let seq = 0;
    let timer: NodeJS.Timeout | null = null;
    const send = (message: unknown) => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify(message));
    ws.on("open", () =>
      send({
        type: "hello",
        v: PROTOCOL_VERSION,
        name,
        token: joinToken,
        pool: "default",
        slots: SLOTS,
        labels: {},
        facts: facts(name),
        attempts: [],
        address: "127.0.0.1",
      }),
    );
    ws.on("message", (data) => {
      const message = JSON.parse(String(data)) as {
        type: string;
        heartbeatSeconds?: number;
        jobId?: string;
        taskIndex?: number;
        attempt?: number;
        reason?: string;
      };
      if (message.type === "welcome") {
        timer = setInterval(
          () => send({ type: "heartbeat", facts: facts(name), progress: [], requirements: [] }),
          (message.heartbeatSeconds ?? 2) * 1000,
        );
        resolve(host);
      } else if (message.type === "reject") reject(new Error(`${name} refused: ${message.reason}`));
      else if (message.type === "start") {
        const ref = { jobId: message.jobId, taskIndex: message.taskIndex, attempt: message.attempt };
        send({ type: "report", seq: ++seq, event: { kind: "started", ...ref } });
        counts.started++;
        send({
          type: "report",
          seq: ++seq,
          event: { kind: "ended", ...ref, outcome: "succeeded", exitCode: 0, reason: null, outputs: [] },
        });
        counts.ended++;
      }
    });
    ws.on("close", () => {
      if (timer) clearInterval(timer);
    });
    ws.on("error", reject);
  });
}

export const manyHostsBenchmark: Benchmark = {
  name: "many-hosts",
  description: `${HOSTS} agents over real WebSockets (heartbeat 2 s): the broker's CPU for heartbeats, and ${TASKS} tasks placed across them`,
  async run({ options, progress }) {
    const steward = await startSteward({
      label: "hosts",
      agents: 0,
      slots: 1,
      keep: options.keep,
      cpuProf: options.cpuProf,
    });
    const hosts: SimulatedHost[] = [];
    try {
      const joinToken = readFileSync(join(steward.dataDir, "join-token"), "utf8").trim();
      const counts = { started: 0, ended: 0 };
      const connectStart = performance.now();
      for (let i = 0; i < HOSTS; i += 50) {
        const batch = [];
        for (let j = i; j < Math.min(HOSTS, i + 50); j++)
          batch.push(connect(steward.url, `sim-${j}`, joinToken, counts));
        hosts.push(...(await Promise.all(batch)));
      }
      const connectSeconds = round((performance.now() - connectStart) / 1000, 2);
      progress(`many-hosts: ${HOSTS} hosts joined in ${connectSeconds} s`);
      await pollUntil(
        "many-hosts: every host ready",
        async () =>
          (await steward.api.hosts()).filter((host) => host.state === "ready").length === HOSTS
            ? true
            : undefined,
        { intervalMs: 500, timeoutMs: 60_000 },
      );
      // Heartbeats alone.
      await new Promise((done) => setTimeout(done, 2000));
      const before = steward.cpuSeconds();
      const idleStart = performance.now();
      await new Promise((done) => setTimeout(done, IDLE_SECONDS * 1000));
      const after = steward.cpuSeconds();
      const wall = (performance.now() - idleStart) / 1000;
      const heartbeatCpu =
        before && after ? round((after.user + after.system - before.user - before.system) / wall, 3) : null;
      progress(
        `many-hosts: heartbeats of ${HOSTS} hosts cost ${heartbeatCpu} of one core (over ${round(wall, 1)} s)`,
      );

      // 10,000 tasks.
      const submitted = performance.now();
      const id = await steward.api.submit({
        name: "bench-many-hosts",
        command: "true",
        array: { count: TASKS },
      });
      await pollUntil("many-hosts: all started", async () => (counts.started >= TASKS ? true : undefined), {
        intervalMs: 20,
        timeoutMs: 300_000,
      });
      const allStartedSeconds = round((performance.now() - submitted) / 1000, 2);
      await pollUntil(
        "many-hosts: all succeeded",
        async () => ((await steward.api.job(id)).state === "succeeded" ? true : undefined),
        { intervalMs: 100, timeoutMs: 300_000 },
      );
      const allSucceededSeconds = round((performance.now() - submitted) / 1000, 2);
      progress(
        `many-hosts: ${TASKS} tasks all started ${allStartedSeconds} s after submit, all succeeded after ${allSucceededSeconds} s`,
      );
      return {
        manyHosts: {
          hosts: HOSTS,
          slotsPerHost: SLOTS,
          connectSeconds,
          heartbeatCpuFraction: heartbeatCpu,
          heartbeatSeconds: 2,
          tasks: TASKS,
          allStartedSeconds,
          allSucceededSeconds,
          tasksPerSecond: round(TASKS / allSucceededSeconds, 1),
        },
      };
    } finally {
      for (const host of hosts) host.ws.terminate();
      await steward.stop();
    }
  },
};
