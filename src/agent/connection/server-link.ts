// The agent's link to a server of its list: a WebSocket (or `up`'s in-process link) that says hello
// on opening, hands each server message to the agent, heartbeats once welcomed, counts a server that
// stops answering pings as gone, and reconnects with back-off to the next server of the list. A
// server of another protocol version is not retried: the agent is told, and stops.

import type { Logger } from "pino";
import { WebSocket } from "ws";
import { fromThisProcess, LINK_STATES, type LinkSocket } from "../../common/protocol/local-link.ts";
import {
  AGENT_CONNECT_PATH,
  type AgentMessage,
  ofAnotherVersion,
  PROTOCOL_VERSION,
  type ServerMessage,
  serverMessage,
} from "../../common/protocol/messages.ts";
import { TurnFrames } from "../../common/protocol/turn-frames.ts";
import { agentLeavesServer, stewardRelease } from "../../common/protocol/versions.ts";
import { CERTIFICATE_ERROR_CODES } from "../../common/transport/trust.ts";
import { reconnectDelayMs } from "./reconnect.ts";

/** A server that has not completed the WebSocket handshake in this time is skipped for the next one. */
export const HANDSHAKE_TIMEOUT_MS = 2000;

/** Missed heartbeat answers after which the connection counts as dead (a half-open TCP). */
export const MISSED_PONGS = 3;

/** A server message other than a batch (a batch is handed over one message at a time). */
export type OneServerMessage = Exclude<ServerMessage, { type: "batch" }>;

export interface ServerLinkOptions {
  servers: string[];
  log: Logger;
  /** A link to a server in this process (`steward up`'s own agents), used instead of a WebSocket. */
  localLink?: () => LinkSocket;
}

/** What the agent does at the link's moments. */
export interface ServerLinkHandlers {
  /** The hello to send on a connection just opened. */
  hello(): Promise<AgentMessage>;
  /** A message from the server (the agent calls `welcomed` on a welcome). */
  message(ws: LinkSocket, message: OneServerMessage): Promise<void>;
  /** The heartbeat to send now on `ws`. */
  heartbeat(ws: LinkSocket): Promise<AgentMessage>;
  /** The server speaks another protocol version: `message` names both. */
  incompatible(message: string): void;
}

export class ServerLink {
  #ws: LinkSocket | null = null;
  #welcomed = false;
  /** The connection's batcher when its server reads batches (its welcome said so): a turn's reports leave as one frame. */
  #frames: TurnFrames | null = null;
  #serverIndex = 0;
  #failures = 0;
  #awaitingPongs = 0;
  #heartbeatTimer: NodeJS.Timeout | null = null;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #stopped = false;
  readonly #options: ServerLinkOptions;
  readonly #handlers: ServerLinkHandlers;

  constructor(options: ServerLinkOptions, handlers: ServerLinkHandlers) {
    this.#options = options;
    this.#handlers = handlers;
  }

  /** The server of the list this link uses now (or next). */
  serverUrl(): string {
    const { servers } = this.#options;
    return servers[this.#serverIndex % servers.length].replace(/\/+$/, "");
  }

  /** The open, welcomed connection, or null. */
  get attached(): LinkSocket | null {
    const ws = this.#ws;
    return ws && this.#welcomed && ws.readyState === LINK_STATES.OPEN ? ws : null;
  }

  /** Whether a connection is current and welcomed (it may be closing). */
  get welcomed(): boolean {
    return this.#ws !== null && this.#welcomed;
  }

  connect(): void {
    if (this.#stopped) return;
    const url = this.serverUrl().replace(/^http/, "ws") + AGENT_CONNECT_PATH;
    const ws: LinkSocket =
      this.#options.localLink?.() ?? new WebSocket(url, { handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    this.#ws = ws;
    this.#welcomed = false;
    this.#frames = null;
    ws.on("open", () => void this.#sendHello(ws));
    ws.on("message", (data) => {
      let message: ServerMessage;
      try {
        const parsed: unknown = JSON.parse(String(data));
        const foreign = ofAnotherVersion(parsed, "welcome");
        if (foreign) {
          this.#handlers.incompatible(
            agentLeavesServer(this.serverUrl(), foreign, {
              version: PROTOCOL_VERSION,
              release: stewardRelease(),
            }),
          );
          return;
        }
        message = fromThisProcess(ws) ? (parsed as ServerMessage) : serverMessage.parse(parsed);
      } catch (error) {
        this.#options.log.warn({ err: error }, "malformed server message");
        return;
      }
      if (message.type === "batch")
        for (const each of message.messages) void this.#handlers.message(ws, each);
      else void this.#handlers.message(ws, message);
    });
    ws.on("pong", () => {
      this.#awaitingPongs = 0;
    });
    ws.on("close", () => this.#disconnected(ws));
    ws.on("error", (error) => {
      // A certificate the agent does not trust is not a passing network problem: it says so plainly.
      const code = (error as NodeJS.ErrnoException).code;
      if (code && CERTIFICATE_ERROR_CODES.has(code)) {
        this.#options.log.error(
          { server: this.serverUrl() },
          `the server's certificate is not trusted (${code}: ${error.message}); give its authority with --ca FILE or STEWARD_CA`,
        );
      } else this.#options.log.debug({ err: error }, "connection error");
    });
  }

  /**
   * The server welcomed this agent on `ws`: reports may go, batched where the server reads
   * batches, and heartbeats start at the server's interval.
   */
  attach(ws: LinkSocket, welcome: { batches?: boolean; heartbeatSeconds: number }): void {
    this.#welcomed = true;
    this.#frames =
      welcome.batches === true
        ? new TurnFrames((text) => {
            if (ws.readyState === LINK_STATES.OPEN) ws.send(text);
          })
        : null;
    this.#failures = 0;
    this.#awaitingPongs = 0;
    if (this.#heartbeatTimer) clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = setInterval(() => void this.#heartbeat(ws), welcome.heartbeatSeconds * 1000);
  }

  /** Sends a message on the current connection once it is welcomed (else it waits in the outbox). */
  sendWhenWelcomed(message: AgentMessage): void {
    if (this.#ws && this.#welcomed) this.send(this.#ws, message);
  }

  /**
   * Sends a message: a report or a heartbeat with the others of this turn where the server reads
   * batches; anything else as a frame of its own, after what waits (the order stays the order sent).
   */
  send(ws: LinkSocket, message: AgentMessage): void {
    if (ws.readyState !== LINK_STATES.OPEN) return;
    const frames = ws === this.#ws ? this.#frames : null;
    if (frames && (message.type === "report" || message.type === "heartbeat")) frames.add(message);
    else {
      frames?.flush();
      ws.send(JSON.stringify(message));
    }
  }

  /** No more heartbeats or reconnects (the connection stays open until `close`). */
  halt(): void {
    this.#stopped = true;
    if (this.#heartbeatTimer) clearInterval(this.#heartbeatTimer);
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
  }

  /** Sends what waits in the turn's batch and closes the connection. */
  close(): void {
    this.#frames?.flush();
    this.#ws?.terminate();
  }

  async #sendHello(ws: LinkSocket): Promise<void> {
    this.send(ws, await this.#handlers.hello());
  }

  #disconnected(ws: LinkSocket): void {
    if (this.#ws !== ws) return;
    this.#ws = null;
    this.#welcomed = false;
    this.#frames = null;
    if (this.#heartbeatTimer) clearInterval(this.#heartbeatTimer);
    if (this.#stopped) return;
    this.#failures++;
    this.#serverIndex++;
    const delay = reconnectDelayMs(this.#failures, Math.random());
    this.#options.log.info({ delayMs: delay }, "disconnected; reconnecting");
    this.#reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  async #heartbeat(ws: LinkSocket): Promise<void> {
    if (ws.readyState !== LINK_STATES.OPEN) return;
    if (this.#awaitingPongs >= MISSED_PONGS) {
      this.#options.log.warn("no answer from the server; reconnecting");
      ws.terminate();
      return;
    }
    this.#awaitingPongs++;
    ws.ping();
    this.send(ws, await this.#handlers.heartbeat(ws));
  }
}
