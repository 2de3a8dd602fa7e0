// The agent gateway: one WebSocket per agent. Reports are applied in the order they arrive and
// acknowledged only after their commit; logs go straight to the blob store. A connection must say
// hello first, within a few seconds and in a few bytes (unwelcomed.ts); only then are its
// messages read at the full size. An agent whose hello says `batches` gets a turn's messages as
// one frame (turn-frames.ts); the welcome says the server reads such frames too.

import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { WebSocketServer } from "ws";
import type { HostFacts } from "../../common/model/host-facts.ts";
import {
  fromThisProcess,
  LINK_STATES,
  type LinkSocket,
  localLink,
} from "../../common/protocol/local-link.ts";
import {
  AGENT_CONNECT_PATH,
  type AgentBatchedMessage,
  type AgentMessage,
  agentMessage,
  type EndedEvent,
  type HeartbeatMessage,
  type LogMessage,
  ofAnotherVersion,
  PROTOCOL_VERSION,
  type ReportMessage,
  type ServerMessage,
  type StartedEvent,
} from "../../common/protocol/messages.ts";
import { TurnFrames } from "../../common/protocol/turn-frames.ts";
import { agentRefusal, stewardRelease } from "../../common/protocol/versions.ts";
import { steadyNow } from "../../common/time/clocks.ts";
import type { AgentLinks } from "../reactor/effects.ts";
import type { AgentCommands, HostCommands } from "../reactor/ports.ts";
import { logKey } from "../store/blob-layout.ts";
import type { BlobStore } from "../store/blobs.ts";
import { StorageFullError } from "../store/storage-full.ts";
import { type AgentCredentials, admitAgent } from "./agent-admission.ts";
import { DEFAULT_MAX_LOG_MB, keptUnderLimit, truncationMarker } from "./log-limit.ts";
import { UnwelcomedConnections, type UnwelcomedWatch } from "./unwelcomed.ts";

/**
 * Reports refused for a full store are applied again after this long: an agent sends a report
 * again only after it reconnects, and the connection stays up meanwhile (its heartbeats keep the
 * host alive).
 */
export const REPORT_RETRY_MS = 1000;

/**
 * What the gateway asks of the core that leads (server/core.ts's Core answers it): the agents'
 * hellos and reports, a leaving agent's host drained, the heartbeats and the liveness every message
 * renews, and what it reads: the ranks a host runs of an attempt (whose log it may write) and the
 * tokens a hello presents.
 */
export interface GatewayPorts {
  readonly agents: Pick<AgentCommands, "attachHost" | "attemptReports">;
  readonly hosts: Pick<HostCommands, "drain">;
  readonly read: {
    ranksOn(host: string, jobId: string, taskIndex: number, number: number): number[];
    readonly tokens: AgentCredentials["tokens"];
  };
  /** A heartbeat: the lease renewed, facts and progress kept; resolves once what it decided is durable. */
  heartbeat(
    name: string,
    facts: HostFacts,
    progress?: HeartbeatMessage["progress"],
    requirements?: HeartbeatMessage["requirements"],
    cache?: HeartbeatMessage["cache"],
    held?: HeartbeatMessage["cacheHeld"],
  ): Promise<void>;
  /** Any message from the agent renews its lease. */
  touch(name: string): void;
  /** The agent's connection is gone. */
  detachHost(name: string): void;
}

export interface GatewayOptions {
  ports: GatewayPorts;
  blobs: BlobStore;
  joinToken: string;
  heartbeatSeconds: number;
  /** An attempt's log (each of stdout and stderr) is kept up to this many MB (`--max-log-mb`). */
  maxLogMb?: number;
  log: Logger;
  /**
   * Null while this server leads; otherwise the leader's URL ("" when none is known yet): a
   * standby turns agents away, and they try the next server in their list.
   */
  leading?: () => string | null;
  /** Why the store is unavailable, or null while it answers: named to the agents turned away. */
  storeDown?: () => string | null;
}

/** The close code a standby turns an agent away with (the reason names the leader when known). */
export const STANDBY_CLOSE_CODE = 4003;

export class AgentGateway implements AgentLinks {
  /** The size limit of one message of a welcomed agent (log chunks, hellos of big hosts). */
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  private readonly unwelcomed = new UnwelcomedConnections();
  private readonly sockets = new Map<string, LinkSocket>();
  /** The server ends of in-process agents' links (acceptLocal): not among the WebSocket server's clients. */
  readonly #local = new Set<LinkSocket>();
  private readonly logWrites = new Map<string, Promise<unknown>>();
  /**
   * Messages for a connection whose welcome is not sent yet, sent right after it: a start must not
   * reach an agent before the welcome that brings its host credential, which its file requests need.
   */
  private readonly beforeWelcome = new Map<LinkSocket, ServerMessage[]>();
  private readonly options: GatewayOptions;
  private readonly maxLogBytes: number;
  private readonly logMarker: Buffer;
  /** Each connection's TCP socket, under its WebSocket: corked while a turn of the event loop sends. */
  readonly #raw = new WeakMap<LinkSocket, Duplex>();
  /** Sockets corked in this turn: their frames leave together, in one write, once it is over. */
  readonly #corked = new Set<Duplex>();
  /** The connections of agents that read batches: a turn's messages to one go as one frame. */
  readonly #frames = new WeakMap<LinkSocket, TurnFrames>();

  constructor(options: GatewayOptions) {
    this.options = options;
    const maxLogMb = options.maxLogMb ?? DEFAULT_MAX_LOG_MB;
    this.maxLogBytes = maxLogMb * 1024 * 1024;
    this.logMarker = truncationMarker(maxLogMb);
  }

  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (request.url ?? "").split("?")[0];
    if (path !== AGENT_CONNECT_PATH) return false;
    if (!this.unwelcomed.hasRoom()) {
      this.options.log.warn(
        { limit: this.unwelcomed.limits.connections },
        "agent connection refused: too many waiting for their welcome",
      );
      this.unwelcomed.refuseUpgrade(socket);
      return true;
    }
    // The callback runs at once, within this call: the count of unwelcomed connections and the
    // room checked above cannot drift apart.
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      this.#raw.set(ws, socket);
      this.accept(ws, this.unwelcomed.watch(ws, socket));
    });
    return true;
  }

  send(host: string, message: ServerMessage): boolean {
    const ws = this.sockets.get(host);
    if (!ws || ws.readyState !== LINK_STATES.OPEN) return false;
    const held = this.beforeWelcome.get(ws);
    if (held) held.push(message);
    else this.#sendTo(ws, message);
    return true;
  }

  /** Sends a message: with the others of this turn to an agent that reads batches, else as a frame of its own. */
  #sendTo(ws: LinkSocket, message: ServerMessage): void {
    const frames = this.#frames.get(ws);
    if (frames) frames.add(message);
    else this.#send(ws, JSON.stringify(message));
  }

  /**
   * Sends a frame; frames sent to one connection in the same turn of the event loop (the starts of
   * a plan, the acknowledgements of a commit) leave in one write instead of one system call each.
   */
  #send(ws: LinkSocket, text: string): void {
    const raw = this.#raw.get(ws);
    if (raw && !this.#corked.has(raw)) {
      if (this.#corked.size === 0) setImmediate(() => this.#uncork());
      raw.cork();
      this.#corked.add(raw);
    }
    ws.send(text);
  }

  #uncork(): void {
    for (const raw of this.#corked) raw.uncork();
    this.#corked.clear();
  }

  disconnect(host: string): void {
    const ws = this.sockets.get(host);
    if (!ws) return;
    this.sockets.delete(host);
    ws.terminate();
    // The socket's close handler no longer knows it (taken out above): the host is detached here.
    this.options.ports.detachHost(host);
  }

  /**
   * A link for an agent in this process (`steward up`'s own): answers the agent's end. The server's
   * end is served as a connection is, from its hello on; nobody outside the process can reach it,
   * so the limits of a connection before its welcome (unwelcomed.ts) do not watch it.
   */
  acceptLocal(): LinkSocket {
    const [agentEnd, serverEnd] = localLink();
    this.#local.add(serverEnd);
    serverEnd.once("close", () => this.#local.delete(serverEnd));
    this.accept(serverEnd, {
      helloArrived() {},
      welcomed() {},
      refuse: (reason) => serverEnd.close(1008, reason),
    });
    return agentEnd;
  }

  close(): void {
    for (const ws of [...this.wss.clients, ...this.#local]) ws.terminate();
    this.wss.close();
  }

  #standby(): boolean {
    return (this.options.leading?.() ?? null) !== null;
  }

  /** Lets every agent go (this server stopped leading): each reconnects and finds the leader. */
  disconnectAll(): void {
    this.sockets.clear();
    for (const ws of [...this.wss.clients, ...this.#local]) ws.close(STANDBY_CLOSE_CODE, "standby");
  }

  private accept(ws: LinkSocket, watch: UnwelcomedWatch): void {
    const { ports, log } = this.options;
    let name: string | null = null;
    let helloArrived = false;
    // One chain per connection: reports are applied one after another, in arrival order.
    let chain: Promise<void> = Promise.resolve();
    /** Reports arrived and not yet taken by the chain. */
    const reports: ReportMessage[] = [];
    /** One message of a welcomed agent (alone in its frame, or one of a batch). */
    const take = (host: string, message: AgentBatchedMessage | LogMessage) => {
      switch (message.type) {
        case "heartbeat":
          ports
            .heartbeat(
              host,
              message.facts,
              message.progress,
              message.requirements,
              message.cache,
              message.cacheHeld,
            )
            .catch((error) => log.error({ err: error }, "heartbeat not applied"));
          return;
        case "log":
          this.appendLog(host, message);
          return;
        case "report":
          // The reports that arrive together (one read of the socket) are applied together, in
          // order, as one step: one commit for all, each acknowledged once it is durable.
          reports.push(message);
          if (reports.length === 1)
            chain = chain
              .then(() => this.#applyReports(ws, host, reports.splice(0)))
              .catch((error) => {
                // The lead was lost under these reports: they are not acknowledged, the agent sends them again.
                log.warn({ err: error }, "report not applied");
              });
          return;
      }
    };
    ws.on("message", (data) => {
      // A server that stopped leading lets its agents go; they find the leader.
      if (this.#standby()) {
        ws.close(STANDBY_CLOSE_CODE, "standby");
        return;
      }
      let message: AgentMessage;
      try {
        const parsed: unknown = JSON.parse(String(data));
        const foreign = ofAnotherVersion(parsed, "hello");
        if (!helloArrived && foreign) {
          const reason = agentRefusal(foreign, { version: PROTOCOL_VERSION, release: stewardRelease() });
          log.warn({ agent: foreign }, reason);
          ws.send(JSON.stringify({ type: "reject", reason } satisfies ServerMessage));
          // A close reason is at most 123 bytes.
          watch.refuse(Buffer.from(reason).subarray(0, 123).toString());
          return;
        }
        message = fromThisProcess(ws) ? (parsed as AgentMessage) : agentMessage.parse(parsed);
      } catch (error) {
        log.warn({ err: error }, "malformed agent message");
        if (!helloArrived) watch.refuse("the first message must be a hello");
        return;
      }
      if (message.type === "hello") {
        helloArrived = true;
        watch.helloArrived();
        chain = chain
          .then(() => this.hello(ws, message, watch))
          .then((accepted) => {
            if (accepted) name = message.name;
          })
          .catch((error) => {
            log.warn({ err: error }, "hello not applied");
            if (this.sockets.get(message.name) === ws) this.sockets.delete(message.name);
            ws.close(STANDBY_CLOSE_CODE, "not applied");
          });
        return;
      }
      if (!helloArrived) {
        watch.refuse("the first message must be a hello");
        return;
      }
      if (!name) return;
      const host = name;
      ports.touch(host);
      if (message.type === "batch") for (const each of message.messages) take(host, each);
      else take(host, message);
    });
    ws.on("close", () => {
      if (name && this.sockets.get(name) === ws) {
        this.sockets.delete(name);
        if (!this.#standby()) ports.detachHost(name);
        log.info({ host: name }, "agent disconnected");
      }
    });
    ws.on("error", () => {});
  }

  /**
   * Applies a connection's reports in order: the started and ended ones that follow each other as
   * one step (AgentCommands.attemptReports), a leaving one by itself. Resolves once they are
   * applied in memory (the next reports may follow at once); each is acknowledged once its commit
   * is durable, a fenced one too (or the agent's outbox would jam), one that failed not at all.
   */
  async #applyReports(ws: LinkSocket, host: string, reports: readonly ReportMessage[]): Promise<void> {
    const { ports, log } = this.options;
    const acknowledge = (seq: number) => {
      if (ws.readyState === LINK_STATES.OPEN) this.#sendTo(ws, { type: "ack", seq });
    };
    let attempts: (ReportMessage & { event: StartedEvent | EndedEvent })[] = [];
    const applyAttempts = () => {
      if (attempts.length === 0) return;
      const batch = attempts;
      attempts = [];
      ports.agents
        .attemptReports(
          host,
          batch.map((report) => report.event),
        )
        .then(
          (errors) =>
            errors.forEach((error, i) => {
              if (error === null) acknowledge(batch[i].seq);
              else log.error({ err: error }, "report not applied");
            }),
          (error) => {
            if (!(error instanceof StorageFullError)) {
              log.error({ err: error }, "reports not applied");
              return;
            }
            // Nothing of them was kept: applied again later, on this connection while it lasts.
            log.warn(
              { host, reports: batch.length, path: error.path },
              "reports not applied: the store is full",
            );
            setTimeout(() => {
              if (ws.readyState === LINK_STATES.OPEN)
                void this.#applyReports(ws, host, batch).catch((again) =>
                  log.warn({ err: again }, "reports not applied"),
                );
            }, REPORT_RETRY_MS).unref();
          },
        );
    };
    for (const report of reports) {
      const { seq, event } = report;
      if (event.kind === "leaving") {
        applyAttempts();
        // Drained before the ends of its attempts are applied: none is placed back on it.
        ports.hosts.drain(host).then(
          () => {
            log.info({ host, reason: event.reason }, "agent leaving");
            acknowledge(seq);
          },
          (error) => log.error({ err: error }, "report not applied"),
        );
        continue;
      }
      // The whole log is in before the end is applied (none to wait for when no log write is in
      // flight, as after most short tasks).
      if (event.kind === "ended" && this.logWrites.size > 0) await this.#logWritten(host, event);
      attempts.push({ ...report, event });
    }
    applyAttempts();
  }

  /** Resolves once the log writes in flight of the ended attempt's ranks on this host are done. */
  async #logWritten(host: string, event: EndedEvent): Promise<void> {
    const ranks =
      event.rank === undefined
        ? this.options.ports.read.ranksOn(host, event.jobId, event.taskIndex, event.attempt)
        : [event.rank];
    for (const rank of ranks.length > 0 ? ranks : [0])
      for (const stream of ["stdout", "stderr"] as const) {
        const written = this.logWrites.get(logKey(event.jobId, event.taskIndex, event.attempt, stream, rank));
        if (written) await written;
      }
  }

  private async hello(
    ws: LinkSocket,
    message: Extract<AgentMessage, { type: "hello" }>,
    watch: UnwelcomedWatch,
  ): Promise<boolean> {
    const { ports, log } = this.options;
    const leader = this.options.leading?.() ?? null;
    if (leader !== null) {
      const store = leader ? null : (this.options.storeDown?.() ?? null);
      const why = leader
        ? `standby; the leader is ${leader}`
        : store === null
          ? "standby; no leader yet"
          : `standby; store unavailable: ${store}`;
      // A close reason is at most 123 bytes.
      ws.close(STANDBY_CLOSE_CODE, Buffer.from(why).subarray(0, 123).toString());
      return false;
    }
    const admission = admitAgent(message, {
      adminToken: "",
      joinToken: this.options.joinToken,
      tokens: ports.read.tokens,
      now: steadyNow(),
    });
    if (!admission.admitted) {
      log.warn({ host: message.name, reason: admission.reason }, "agent refused");
      ws.send(JSON.stringify({ type: "reject", reason: admission.reason }));
      // A close reason is at most 123 bytes.
      ws.close(4001, Buffer.from(admission.reason).subarray(0, 123).toString());
      return false;
    }
    const previous = this.sockets.get(message.name);
    if (previous && previous !== ws) previous.terminate();
    this.sockets.set(message.name, ws);
    const held: ServerMessage[] = [];
    this.beforeWelcome.set(ws, held);
    if (message.batches === true)
      this.#frames.set(
        ws,
        new TurnFrames((text) => {
          if (ws.readyState === LINK_STATES.OPEN) ws.send(text);
        }),
      );
    else this.#frames.delete(ws);
    let attached: Awaited<ReturnType<AgentCommands["attachHost"]>>;
    try {
      attached = await ports.agents.attachHost(message, admission.issue ?? undefined);
    } catch (error) {
      // A full store refused the hello's commit: the agent is let go and says hello again soon;
      // meanwhile it is alive (admitted), and its host is not taken for lost.
      if (error instanceof StorageFullError) ports.touch(message.name);
      throw error;
    } finally {
      this.beforeWelcome.delete(ws);
    }
    const { kill, credential } = attached;
    ws.send(
      JSON.stringify({
        type: "welcome",
        v: PROTOCOL_VERSION,
        release: stewardRelease(),
        heartbeatSeconds: this.options.heartbeatSeconds,
        maxLogBytes: this.maxLogBytes,
        kill,
        ...(credential ? { credential } : {}),
        batches: true,
      } satisfies ServerMessage),
    );
    for (const each of held) this.#sendTo(ws, each);
    watch.welcomed();
    log.info({ host: message.name, slots: message.slots, kill: kill.length }, "agent attached");
    return true;
  }

  private appendLog(host: string, message: LogMessage): void {
    const { ports, blobs, log } = this.options;
    // A log has one writer: the host that runs the attempt, for a rank it runs. Anyone else's
    // bytes would land in another job's log, and shift the offsets its real agent appends at.
    const ranks = ports.read.ranksOn(host, message.jobId, message.taskIndex, message.attempt);
    const rank = message.rank ?? ranks[0];
    if (rank === undefined || !ranks.includes(rank)) {
      log.debug(
        { host, jobId: message.jobId, taskIndex: message.taskIndex },
        "log of an attempt not on this host",
      );
      return;
    }
    const key = logKey(message.jobId, message.taskIndex, message.attempt, message.stream, rank);
    const data = Buffer.from(message.data, "base64");
    // Past the limit the bytes are dropped, yet taken as appended: the agent moves on. The marker
    // is written at the limit each time (the same bytes: only the first write adds them).
    const { kept, past } = keptUnderLimit(message.offset, data.length, this.maxLogBytes);
    const previous = this.logWrites.get(key) ?? Promise.resolve();
    const next = previous
      .then(async () => {
        if (kept > 0) await blobs.append(key, message.offset, data.subarray(0, kept));
        if (past) await blobs.append(key, this.maxLogBytes, this.logMarker);
      })
      .catch((error) => log.warn({ err: error, key }, "log append refused"))
      .finally(() => {
        if (this.logWrites.get(key) === next) this.logWrites.delete(key);
      });
    this.logWrites.set(key, next);
  }
}
