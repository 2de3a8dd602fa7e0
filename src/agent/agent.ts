// The host daemon: connects to any server in its list, says hello with what it runs, heartbeats,
// runs attempts, streams their logs, and reports through an outbox that resends until acknowledged.

import { mkdir, open, stat } from "node:fs/promises";
import os from "node:os";
import type { Logger } from "pino";
import { WebSocket } from "ws";
import {
  AGENT_CONNECT_PATH,
  type AgentMessage,
  PROTOCOL_VERSION,
  type ReportEvent,
  type ServerMessage,
  serverMessage,
} from "../protocol/messages.ts";
import { Attempt } from "./attempt.ts";
import { readHostFacts, type StaticFacts } from "./facts.ts";
import { Outbox } from "./outbox.ts";
import { reconnectDelayMs } from "./reconnect.ts";
import { measureSpeed } from "./speed.ts";

export interface AgentOptions {
  servers: string[];
  joinToken: string;
  name?: string;
  pool?: string;
  slots?: number;
  workDir: string;
  labels?: Record<string, string>;
  speed?: number;
  log: Logger;
}

const LOG_FLUSH_MS = 400;
const LOG_CHUNK_BYTES = 256 * 1024;

export class Agent {
  readonly name: string;
  readonly slots: number;
  private readonly options: AgentOptions;
  private readonly fixed: StaticFacts;
  private readonly attempts = new Map<string, Attempt>();
  private readonly outbox = new Outbox();
  private ws: WebSocket | null = null;
  private serverIndex = 0;
  private failures = 0;
  private heartbeatSeconds = 2;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private logTimer: NodeJS.Timeout | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private welcomed = false;
  private stopped = false;
  private readonly log: Logger;

  constructor(options: AgentOptions) {
    this.options = options;
    this.name = options.name ?? os.hostname();
    this.slots = options.slots ?? os.availableParallelism();
    this.log = options.log.child({ agent: this.name });
    this.fixed = {
      name: this.name,
      pool: options.pool ?? "default",
      labels: options.labels ?? {},
      speed: options.speed ?? measureSpeed(),
      workDir: options.workDir,
    };
  }

  async start(): Promise<void> {
    await mkdir(this.options.workDir, { recursive: true });
    this.logTimer = setInterval(() => void this.flushLogs(), LOG_FLUSH_MS);
    this.connect();
  }

  /** Stops talking to the server. Running attempts are killed only when `killAttempts`. */
  async stop(killAttempts = true): Promise<void> {
    this.stopped = true;
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.logTimer) clearInterval(this.logTimer);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (killAttempts) for (const attempt of this.attempts.values()) attempt.kill();
    this.ws?.terminate();
  }

  runningAttempts(): number {
    return this.attempts.size;
  }

  private serverUrl(): string {
    return this.options.servers[this.serverIndex % this.options.servers.length].replace(/\/+$/, "");
  }

  private connect(): void {
    if (this.stopped) return;
    const url = this.serverUrl().replace(/^http/, "ws") + AGENT_CONNECT_PATH;
    const ws = new WebSocket(url, { handshakeTimeout: 5000 });
    this.ws = ws;
    this.welcomed = false;
    ws.on("open", () => void this.sendHello(ws));
    ws.on("message", (data) => {
      let message: ServerMessage;
      try {
        message = serverMessage.parse(JSON.parse(String(data)));
      } catch (error) {
        this.log.warn({ err: error }, "malformed server message");
        return;
      }
      this.handle(ws, message);
    });
    ws.on("close", () => this.disconnected(ws));
    ws.on("error", (error) => this.log.debug({ err: error }, "connection error"));
  }

  private disconnected(ws: WebSocket): void {
    if (this.ws !== ws) return;
    this.ws = null;
    this.welcomed = false;
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.stopped) return;
    this.failures++;
    this.serverIndex++;
    const delay = reconnectDelayMs(this.failures, Math.random());
    this.log.info({ delayMs: delay }, "disconnected; reconnecting");
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  private async sendHello(ws: WebSocket): Promise<void> {
    const held: { jobId: string; taskIndex: number; attempt: number; state: "running" | "ended" }[] = [
      ...this.attempts.values(),
    ].map((attempt) => ({
      jobId: attempt.spec.jobId,
      taskIndex: attempt.spec.taskIndex,
      attempt: attempt.spec.attempt,
      state: "running",
    }));
    for (const event of this.outbox.pendingEnds()) {
      if (!this.attempts.has(`${event.jobId}/${event.taskIndex}/${event.attempt}`)) {
        held.push({ jobId: event.jobId, taskIndex: event.taskIndex, attempt: event.attempt, state: "ended" });
      }
    }
    this.send(ws, {
      type: "hello",
      v: PROTOCOL_VERSION,
      name: this.name,
      token: this.options.joinToken,
      pool: this.fixed.pool,
      slots: this.slots,
      labels: this.fixed.labels,
      facts: await this.facts(),
      attempts: held,
    });
  }

  private async facts() {
    return readHostFacts(this.fixed, Math.max(0, this.slots - this.busySlots()));
  }

  private busySlots(): number {
    let busy = 0;
    for (const attempt of this.attempts.values()) busy += attempt.spec.cpus;
    return busy;
  }

  private handle(ws: WebSocket, message: ServerMessage): void {
    switch (message.type) {
      case "welcome": {
        this.welcomed = true;
        this.failures = 0;
        this.heartbeatSeconds = message.heartbeatSeconds;
        for (const ref of message.kill) {
          const key = `${ref.jobId}/${ref.taskIndex}/${ref.attempt}`;
          this.attempts.get(key)?.kill();
          this.outbox.dropAttempt(ref.jobId, ref.taskIndex, ref.attempt);
        }
        if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
        this.heartbeatTimer = setInterval(() => void this.heartbeat(ws), this.heartbeatSeconds * 1000);
        for (const report of this.outbox.all()) this.send(ws, report);
        this.log.info({ server: this.serverUrl(), resent: this.outbox.size }, "attached");
        return;
      }
      case "reject":
        this.log.error({ reason: message.reason }, "server rejected this agent");
        return;
      case "ack":
        this.outbox.ack(message.seq);
        return;
      case "start":
        this.startAttempt(message);
        return;
      case "stop": {
        const attempt = this.attempts.get(`${message.jobId}/${message.taskIndex}/${message.attempt}`);
        attempt?.stop(message.outcome, message.reason, message.graceSeconds);
        return;
      }
    }
  }

  private async heartbeat(ws: WebSocket): Promise<void> {
    if (ws.readyState !== WebSocket.OPEN) return;
    this.send(ws, { type: "heartbeat", facts: await this.facts() });
  }

  private startAttempt(spec: Extract<ServerMessage, { type: "start" }>): void {
    const attempt = new Attempt(spec, {
      serverUrl: () => this.serverUrl(),
      joinToken: this.options.joinToken,
      hostName: this.name,
      workDir: this.options.workDir,
    });
    if (this.attempts.has(attempt.key)) return;
    this.attempts.set(attempt.key, attempt);
    const ref = { jobId: spec.jobId, taskIndex: spec.taskIndex, attempt: spec.attempt };
    attempt
      .run((pid) => this.report({ kind: "started", ...ref, pid }))
      .then(async (result) => {
        await this.flushAttemptLogs(attempt);
        this.report({ kind: "ended", ...ref, ...result });
      })
      .catch((error) => {
        this.log.error({ err: error, attempt: attempt.key }, "attempt failed inside the agent");
        this.report({
          kind: "ended",
          ...ref,
          outcome: "lost",
          exitCode: null,
          reason: String(error),
          outputs: [],
        });
      })
      .finally(async () => {
        this.attempts.delete(attempt.key);
        await attempt.cleanup().catch(() => {});
      });
  }

  private report(event: ReportEvent): void {
    const message = this.outbox.add(event);
    if (this.ws && this.welcomed) this.send(this.ws, message);
  }

  private send(ws: WebSocket, message: AgentMessage): void {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  }

  private async flushLogs(): Promise<void> {
    if (!this.ws || !this.welcomed) return;
    for (const attempt of this.attempts.values()) await this.flushAttemptLogs(attempt);
  }

  /** Sends the bytes of stdout and stderr written since the last flush. */
  private async flushAttemptLogs(attempt: Attempt): Promise<void> {
    for (const stream of ["stdout", "stderr"] as const) {
      const path = stream === "stdout" ? attempt.stdoutPath : attempt.stderrPath;
      const info = await stat(path).catch(() => null);
      if (!info || info.size <= attempt.sent[stream]) continue;
      const ws = this.ws;
      if (!ws || !this.welcomed || ws.readyState !== WebSocket.OPEN) return;
      const handle = await open(path, "r");
      try {
        while (attempt.sent[stream] < info.size) {
          const length = Math.min(LOG_CHUNK_BYTES, info.size - attempt.sent[stream]);
          const buffer = Buffer.alloc(length);
          const { bytesRead } = await handle.read(buffer, 0, length, attempt.sent[stream]);
          if (bytesRead === 0) break;
          this.send(ws, {
            type: "log",
            jobId: attempt.spec.jobId,
            taskIndex: attempt.spec.taskIndex,
            attempt: attempt.spec.attempt,
            stream,
            offset: attempt.sent[stream],
            data: buffer.subarray(0, bytesRead).toString("base64"),
          });
          attempt.sent[stream] += bytesRead;
        }
      } finally {
        await handle.close();
      }
    }
  }
}
