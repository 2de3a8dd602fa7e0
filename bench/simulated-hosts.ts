// Simulated hosts for the benchmarks: agent connections over real WebSockets, held by the bench
// process and speaking the agents' protocol (src/common/protocol/messages.ts) as `steward agent`
// does: a hello with the join token, heartbeats with the host's facts at the interval the welcome
// gives, and every start answered at once with an ended report (succeeded, exit code 0), numbered
// and kept in an outbox until the server acknowledges it (the server acknowledges a report only
// once it is committed). A job that ends at once is reported so by a real agent too: its start is
// reported only if the job still runs START_REPORT_DELAY_MS (10 ms) after it (src/agent/attempt/start-reports.ts).
// With STEWARD_BENCH_REPORT_STARTS=1 every start is reported as well, before its end (as an agent
// reports a job that runs a while): two reports a task, as these hosts sent before 2026-11-28. Both
// ends send a turn's messages as one batch frame, as agents and servers do (turn-frames.ts). Nothing runs: the hosts cost the broker what
// real agents' messages cost it, and nothing else.

import { readFileSync } from "node:fs";
import WebSocket from "ws";
import {
  AGENT_CONNECT_PATH,
  type HeartbeatMessage,
  type HelloMessage,
  PROTOCOL_VERSION,
  type ReportEvent,
  type ReportMessage,
  type ServerMessage,
} from "../src/common/protocol/messages.ts";
import { TurnFrames } from "../src/common/protocol/turn-frames.ts";

/** Counts over every simulated host of one set. */
export interface SimulatedCounts {
  /** Start messages received (each answered with an ended report, after a started one with REPORT_STARTS). */
  starts: number;
  /** Reports sent, and those acknowledged by the server (committed). */
  reports: number;
  acks: number;
  heartbeats: number;
}

export interface SimulatedHost {
  name: string;
  ws: WebSocket;
  /** Reports sent and not yet acknowledged, by sequence number. */
  outbox: Map<number, ReportMessage>;
}

export interface SimulatedHostOptions {
  url: string;
  joinToken: string;
  slots: number;
  counts: SimulatedCounts;
}

export function newCounts(): SimulatedCounts {
  return { starts: 0, reports: 0, acks: 0, heartbeats: 0 };
}

function facts(name: string, slots: number): HelloMessage["facts"] {
  return {
    name,
    pool: "default",
    os: "linux",
    arch: "x64",
    cpus: slots,
    memoryMb: 16_384,
    memFreeMb: 8192,
    load1: 0.1,
    cpuFree: slots,
    diskFreeMb: 100_000,
    speed: 1,
    labels: {},
    slotsFree: slots,
  };
}

/** Whether every start is reported before its end (STEWARD_BENCH_REPORT_STARTS=1), not the end alone. */
export const REPORT_STARTS = process.env.STEWARD_BENCH_REPORT_STARTS === "1";

/** Opens one host's connection; resolves once it is welcomed. */
export function connectHost(name: string, options: SimulatedHostOptions): Promise<SimulatedHost> {
  const { url, joinToken, slots, counts } = options;
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, "ws") + AGENT_CONNECT_PATH);
    const host: SimulatedHost = { name, ws, outbox: new Map() };
    let seq = 0;
    // Every simulated attempt has a pid of its own, as a real one would.
    let pid = 100_000;
    let timer: NodeJS.Timeout | null = null;
    // Until the welcome says the server reads batches, each message goes alone.
    let frames: TurnFrames | null = null;
    const send = (message: HelloMessage | HeartbeatMessage | ReportMessage) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      if (frames) frames.add(message);
      else ws.send(JSON.stringify(message));
    };
    const report = (event: ReportEvent) => {
      const message: ReportMessage = { type: "report", seq: ++seq, event };
      host.outbox.set(message.seq, message);
      counts.reports++;
      send(message);
    };
    ws.on("open", () =>
      send({
        type: "hello",
        v: PROTOCOL_VERSION,
        name,
        token: joinToken,
        pool: "default",
        slots,
        labels: {},
        facts: facts(name, slots),
        attempts: [],
        address: "127.0.0.1",
        batches: true,
      } satisfies HelloMessage),
    );
    const take = (message: ServerMessage) => {
      switch (message.type) {
        case "batch":
          for (const each of message.messages) take(each);
          return;
        case "welcome": {
          if (message.batches)
            frames = new TurnFrames((text) => {
              if (ws.readyState === WebSocket.OPEN) ws.send(text);
            });
          const heartbeat: HeartbeatMessage = {
            type: "heartbeat",
            facts: facts(name, slots),
            progress: [],
            requirements: [],
          };
          timer = setInterval(() => {
            counts.heartbeats++;
            send(heartbeat);
          }, message.heartbeatSeconds * 1000);
          resolve(host);
          return;
        }
        case "reject":
          reject(new Error(`${name} refused: ${message.reason}`));
          return;
        case "start": {
          counts.starts++;
          const ref = { jobId: message.jobId, taskIndex: message.taskIndex, attempt: message.attempt };
          if (REPORT_STARTS) report({ kind: "started", ...ref, pid: ++pid });
          report({ kind: "ended", ...ref, outcome: "succeeded", exitCode: 0, reason: null, outputs: [] });
          return;
        }
        case "ack":
          if (host.outbox.delete(message.seq)) counts.acks++;
          return;
        case "stop":
          // Every attempt has ended already (its ended report is in the outbox or acknowledged).
          return;
      }
    };
    ws.on("message", (data) => take(JSON.parse(String(data)) as ServerMessage));
    ws.on("close", () => {
      if (timer) clearInterval(timer);
    });
    ws.on("error", reject);
  });
}

/**
 * Connects `count` hosts named `PREFIX-0`, `PREFIX-1`, ..., `batch` at a time (the broker answers
 * 503 to more than 256 connections waiting for their welcome at once).
 */
export async function connectHosts(
  count: number,
  prefix: string,
  options: SimulatedHostOptions,
  batch = 100,
): Promise<SimulatedHost[]> {
  const hosts: SimulatedHost[] = [];
  for (let i = 0; i < count; i += batch) {
    const pending: Promise<SimulatedHost>[] = [];
    for (let j = i; j < Math.min(count, i + batch); j++) pending.push(connectHost(`${prefix}-${j}`, options));
    hosts.push(...(await Promise.all(pending)));
  }
  return hosts;
}

export function disconnectHosts(hosts: SimulatedHost[]): void {
  for (const host of hosts) host.ws.terminate();
}

/**
 * The soft limit on open files of this process (Node raises it to the hard limit at start, and a
 * child process inherits it): every connection takes one descriptor here and one in the broker.
 */
export function openFilesLimit(pid: number | "self" = "self"): number | null {
  try {
    const line = readFileSync(`/proc/${pid}/limits`, "utf8")
      .split("\n")
      .find((each) => each.startsWith("Max open files"));
    const soft = line?.split(/\s{2,}/)[1];
    return soft === undefined ? null : soft === "unlimited" ? Number.POSITIVE_INFINITY : Number(soft);
  } catch {
    return null;
  }
}

/** Throws, naming the limit, when `pid` cannot hold `connections` sockets and some room besides. */
export function checkOpenFiles(pid: number | "self", connections: number, what: string): void {
  const limit = openFilesLimit(pid);
  if (limit !== null && limit < connections + 200)
    throw new Error(
      `${what} may open ${limit} files, fewer than the ${connections} connections and 200 more it needs: raise the hard limit (ulimit -Hn, or LimitNOFILE=) before the run`,
    );
}

/** The resident set of a process, MB (VmRSS of /proc/PID/status), or null. */
export function residentMb(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}
