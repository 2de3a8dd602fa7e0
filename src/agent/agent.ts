// The host daemon: connects to any server in its list, says hello with what it holds, heartbeats,
// runs attempts through the launcher, streams their logs, and reports through an outbox that is
// resent until acknowledged. Attempts outlive the agent: a restarted agent with the same work
// folder re-adopts them, and learns the exit of those that ended while it was away.

import { statSync } from "node:fs";
import { mkdir, open, readdir } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { WebSocket } from "ws";
import { newTokenOf } from "../common/model/tokens.ts";
import { fromThisProcess, LINK_STATES, type LinkSocket } from "../common/protocol/local-link.ts";
import {
  AGENT_CONNECT_PATH,
  type AgentMessage,
  ofAnotherVersion,
  PROTOCOL_VERSION,
  type ReportEvent,
  type ServerMessage,
  type StartMessage,
  serverMessage,
} from "../common/protocol/messages.ts";
import { TurnFrames } from "../common/protocol/turn-frames.ts";
import { agentLeavesServer, stewardRelease } from "../common/protocol/versions.ts";
import { HttpClient } from "../common/transport/http-client.ts";
import { CERTIFICATE_ERROR_CODES } from "../common/transport/trust.ts";
import { Attempt, type AttemptContext, attemptKeyOf } from "./attempt.ts";
import { lockWorkFolder } from "./attempt-folder.ts";
import { type Enforcement, openEnforcement, readLayout, removeBase, sweepCgroups } from "./enforcement.ts";
import { readHostFacts, type StaticFacts } from "./facts.ts";
import { declaredGpus } from "./gpus.ts";
import { readHostCredential, writeHostCredential } from "./host-credential.ts";
import { chooseLauncher, type LaunchedJob, Launcher, launcherCacheWarning } from "./launcher.ts";
import { Outbox } from "./outbox.ts";
import { reconnectDelayMs } from "./reconnect.ts";
import { accountFor, type JobUser, type RunAs, RunAsError, runAsNotice } from "./run-as.ts";
import { SPARE_FOLDERS_MAX, SpareFolders } from "./spare-folders.ts";
import { hostSpeed } from "./speed.ts";

/** A server that has not completed the WebSocket handshake in this time is skipped for the next one. */
export const HANDSHAKE_TIMEOUT_MS = 2000;

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
  /** Called when the server refuses this agent for good (a wrong join token). */
  onRejected?: (reason: string) => void;
  /** The server speaks another protocol version: the agent has stopped, `message` names both. */
  onIncompatible?: (message: string) => void;
  /** A pilot's agent leaves after this many seconds with no attempt (the pool's idleSeconds). */
  idleSeconds?: number;
  /** Called once the agent has been idle for idleSeconds (it has already let go of the server). */
  onIdle?: () => void;
  /** A pilot's walltime end (ms since the epoch): told to the server, which moves work away before it. */
  endsAt?: number;
  /** Where other hosts reach this one (multi-node jobs); default: its first external IPv4 address. */
  address?: string;
  /** Whom jobs run as (--run-as, --run-as-owner; see run-as.ts); default: the agent's own account. */
  runAs?: RunAs;
  /**
   * The umask jobs start with: the one the agent was started with, which the daemons tighten to
   * 077 for their own files (daemons/private-folder.ts). Default: the agent's own at the time.
   */
  jobUmask?: number;
  /** Enforce attempts' memory, CPU and process limits with cgroups where the host allows (default true; --no-enforce). */
  enforce?: boolean;
  /** `--gpus`: `auto` or device indexes (0,1,3); absent: none. */
  gpus?: string;
  /** `--resource name=N`: countable resources offered to jobs. */
  resources?: Record<string, number>;
  /**
   * A link to a server in this process (`steward up`'s own agents), used instead of a WebSocket to
   * `servers` (which still serve the files: inputs, outputs, checkpoints).
   */
  localLink?: () => LinkSocket;
}

/** The host's first external IPv4 address, or the loopback when it has none. */
function defaultAddress(): string {
  for (const list of Object.values(os.networkInterfaces()))
    for (const each of list ?? []) if (each.family === "IPv4" && !each.internal) return each.address;
  return "127.0.0.1";
}

/** Why a leaving pilot's attempts end `migrated`. */
export const LEAVING_REASON = "pilot ended by its batch system";

/**
 * How long a pilot holds the end of a job killed by a signal the agent did not send. A batch system
 * ending the pilot (scancel) signals the job and the agent at once, and the job's end may be heard
 * first: told to leave meanwhile, the agent reports a migration, not the job's failure.
 */
export const SIGNALLED_END_HOLD_MS = 1000;

/** How long a leaving pilot waits for its attempts to stop and their reports to be acknowledged. */
export const LEAVE_TIMEOUT_MS = 25_000;

const LOG_FLUSH_MS = 400;
const LOG_CHUNK_BYTES = 256 * 1024;
/** How often attempts are checked for an exit the launcher did not tell us of (re-adopted ones). */
const EXIT_POLL_MS = 250;
/** A job whose process is gone with no exit recorded is given this long before it counts as lost. */
const MISSING_EXIT_GRACE_MS = 2000;
/** Missed heartbeat answers after which the connection counts as dead (a half-open TCP). */
const MISSED_PONGS = 3;
/**
 * How long a job's start waits to be reported: a job that ends sooner is reported once, by its end
 * (the server takes the end of an attempt it has not heard start as it takes any end), which saves
 * a short task a report, a commit and an acknowledgement. A gang's rank reports its start at once.
 */
export const START_REPORT_DELAY_MS = 10;

export class Agent {
  readonly name: string;
  readonly slots: number;
  private readonly options: AgentOptions;
  private readonly fixed: StaticFacts;
  private readonly context: AttemptContext;
  /** Attempts this agent holds: running, or ended with the end not yet acknowledged. */
  private readonly attempts = new Map<string, Attempt>();
  private readonly byDir = new Map<string, Attempt>();
  private readonly outbox = new Outbox();
  private readonly launcher: Launcher;
  private readonly missingSince = new Map<string, number>();
  /** Started attempts whose start is not reported yet (START_REPORT_DELAY_MS), and the timer that reports them. */
  private readonly unreportedStarts = new Set<Attempt>();
  private startReportTimer: NodeJS.Timeout | null = null;
  private ws: LinkSocket | null = null;
  /** Acknowledged ends not forgotten yet (forgetSoon), and the turn that forgets them. */
  private readonly acknowledged = new Set<Attempt>();
  private forgetTimer: NodeJS.Immediate | null = null;
  private serverIndex = 0;
  private failures = 0;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private timers: NodeJS.Timeout[] = [];
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** The log flush of each attempt under way, so that flushes of one attempt run one after another. */
  private readonly logFlushes = new Map<string, Promise<void>>();
  private awaitingPongs = 0;
  private welcomed = false;
  /** The connection's batcher when its server reads batches (its welcome said so): a turn's reports leave as one frame. */
  private frames: TurnFrames | null = null;
  /** The server's limit of a log (its welcome's maxLogBytes): bytes past it are not sent. */
  private maxLogBytes = Number.POSITIVE_INFINITY;
  private stopped = false;
  /** Leaving (a pilot's batch job ends): said in every hello from now on. */
  private leaving = false;
  private leavingReason = LEAVING_REASON;
  private readonly runAs: RunAs;
  /**
   * The host credential (host-credential in the work folder): made here before the first join and
   * proposed in the hello; the server's welcome may give another (a server that makes its own).
   */
  private credential: string | null = null;
  private readonly log: Logger;

  constructor(options: AgentOptions) {
    this.options = options;
    this.name = options.name ?? os.hostname();
    this.slots = options.slots ?? os.availableParallelism();
    this.log = options.log.child({ agent: this.name });
    this.runAs = options.runAs ?? { kind: "self" };
    this.fixed = {
      name: this.name,
      pool: options.pool ?? "default",
      labels: options.labels ?? {},
      speed: options.speed ?? hostSpeed(),
      workDir: options.workDir,
    };
    this.context = {
      // The host credential once it has one; the join token before.
      http: new HttpClient({
        baseUrl: () => this.serverUrl(),
        token: () => this.credential ?? options.joinToken,
        // A standby's redirect is followed to another server of the list only: the token stays among them.
        redirectOrigins: options.servers,
        serversName: "--server",
      }),
      hostName: this.name,
      workDir: options.workDir,
      ...(options.jobUmask !== undefined ? { jobUmask: options.jobUmask } : {}),
      spares: new SpareFolders(options.workDir, Math.max(SPARE_FOLDERS_MAX, 2 * this.slots)),
      launcher: chooseLauncher(process.env.STEWARD_LAUNCHER),
    };
    this.launcher = new Launcher(join(options.workDir, "attempts"), this.context.launcher);
  }

  async start(): Promise<void> {
    await mkdir(join(this.options.workDir, "attempts"), { recursive: true, mode: 0o700 });
    this.context.spares.load();
    const notice = runAsNotice(this.runAs);
    if (notice.warn) this.log.warn(notice.message);
    else this.log.info(notice.message);
    const refusedCache = launcherCacheWarning();
    if (refusedCache) this.log.warn(refusedCache);
    // Jobs of other accounts pass through to their own attempt folder, and see nothing else here.
    if (this.runAs.kind !== "self") await lockWorkFolder(this.options.workDir);
    this.credential = await readHostCredential(this.options.workDir);
    if (this.credential === null && this.options.joinToken) {
      // Made and kept before the first hello, which proposes it: a server that commits it and
      // stops before its welcome arrives has given this agent the credential all the same.
      this.credential = newTokenOf("host").text;
      await writeHostCredential(this.options.workDir, this.credential);
    }
    this.launcher.on("started", (job) => this.started(job));
    this.launcher.on("exited", (dir, code) => void this.exited(dir, code));
    const gpus = await declaredGpus(this.options.gpus);
    this.context.enforcement = this.chooseEnforcement(gpus.length > 0);
    this.fixed.enforces = this.context.enforcement !== null;
    if (this.options.gpus !== undefined)
      this.log.info(`gpus: ${gpus.length > 0 ? gpus.join(",") : "none found"}`);
    if (gpus.length > 0) {
      this.fixed.gpus = gpus;
      this.context.gpus = gpus;
      const base = this.context.enforcement?.base;
      // v1's devices controller keeps each attempt to its own GPUs; v2 would need a BPF device program.
      this.fixed.gpusIsolated = base !== undefined && base.version === 1 && base.dirs.devices !== undefined;
      if (!this.fixed.gpusIsolated)
        this.log.warn(
          `gpus: attempts are not kept from the GPUs not given to them (${base ? "cgroup v2 has no devices controller" : "no cgroups"}): a job can open any of this host's GPUs; CUDA_VISIBLE_DEVICES names its own. steward hosts shows it`,
        );
    }
    const resources = this.options.resources ?? {};
    if (Object.keys(resources).length > 0) this.fixed.resources = resources;
    this.launcher.start();
    if (this.launcher.kind === "sh" && (process.env.STEWARD_LAUNCHER ?? "") === "")
      this.log.warn(
        "jobs start through the sh launcher: no perl with its POSIX module here (a job costs two processes more)",
      );
    else this.log.info(`jobs start through the ${this.launcher.kind} launcher`);
    await this.adoptAttempts();
    if (this.context.enforcement) {
      const live = new Set<string>();
      for (const attempt of this.attempts.values()) if (attempt.cgroupName) live.add(attempt.cgroupName);
      const swept = await sweepCgroups(this.context.enforcement, live);
      if (swept > 0)
        this.log.info({ swept }, "removed the cgroups of attempts that ended while the agent was away");
    }
    this.timers.push(setInterval(() => void this.flushLogs(), LOG_FLUSH_MS));
    this.timers.push(setInterval(() => void this.pollExits(), EXIT_POLL_MS));
    const { idleSeconds, onIdle } = this.options;
    if (idleSeconds !== undefined && onIdle) {
      let idleSince = Date.now();
      this.timers.push(
        setInterval(() => {
          if (this.attempts.size > 0) {
            idleSince = Date.now();
            return;
          }
          if (Date.now() - idleSince < idleSeconds * 1000) return;
          // The socket closes first: the server stops placing work here before the process goes.
          void this.stop().then(onIdle);
        }, 1000),
      );
    }
    this.connect();
  }

  /**
   * A pilot's batch job is ending (scancel, its walltime): every attempt is stopped as a migration
   * (SIGTERM, the grace period to checkpoint, the last checkpoint uploaded), reported `migrated` so
   * its task restarts elsewhere uncharged, and the agent leaves once the server has the reports.
   */
  async leave(reason: string, timeoutMs = LEAVE_TIMEOUT_MS): Promise<void> {
    // First the server hears it: the host is drained before its attempts' ends arrive (and from
    // its hello on, if it has to connect again: a pilot frozen, then woken by its batch system).
    this.leaving = true;
    this.leavingReason = reason;
    this.report({ kind: "leaving", reason });
    for (const attempt of [...this.attempts.values()]) {
      if (!attempt.ended) await attempt.stop("migrated", reason, attempt.spec.graceSeconds);
    }
    const deadline = Date.now() + timeoutMs;
    while ((this.attempts.size > 0 || this.outbox.size > 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await this.stop(true);
  }

  /** Stops talking to the server. Attempts go on running unless `killAttempts`, to be re-adopted. */
  async stop(killAttempts = false): Promise<void> {
    this.stopped = true;
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    for (const timer of this.timers) clearInterval(timer);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.startReportTimer) clearTimeout(this.startReportTimer);
    if (this.forgetTimer) {
      clearImmediate(this.forgetTimer);
      await this.forgetAcknowledged();
    }
    if (killAttempts) for (const attempt of this.attempts.values()) attempt.kill();
    // An agent that holds no attempt leaves no cgroup of its own behind.
    if (this.context.enforcement && this.attempts.size === 0) removeBase(this.context.enforcement);
    this.launcher.close();
    this.frames?.flush();
    this.ws?.terminate();
  }

  /** Enforcement where the host allows it, said in one line either way. */
  private chooseEnforcement(gpus: boolean): Enforcement | null {
    if (this.options.enforce === false) {
      this.log.warn("not enforcing resource limits: --no-enforce");
      return null;
    }
    const found = readLayout();
    const chosen =
      "layout" in found ? openEnforcement(this.name, this.options.workDir, found.layout, gpus) : found;
    if ("unavailable" in chosen) {
      this.log.warn(`not enforcing resource limits: ${chosen.unavailable}`);
      return null;
    }
    this.log.info(chosen.enforcement.description);
    return chosen.enforcement;
  }

  private serverUrl(): string {
    return this.options.servers[this.serverIndex % this.options.servers.length].replace(/\/+$/, "");
  }

  // ---- attempts

  private async adoptAttempts(): Promise<void> {
    const root = join(this.options.workDir, "attempts");
    for (const entry of await readdir(root)) {
      const attempt = await Attempt.adopt(join(root, entry), this.context);
      if (!attempt) continue;
      this.track(attempt);
      attempt.armTimeLimit();
      if (attempt.exitCode === null) attempt.armCheckpoints(this.checkpointError(attempt));
      if (attempt.exitCode !== null) await this.exited(attempt.dir, attempt.exitCode);
      this.log.info({ attempt: attempt.key, pid: attempt.pid, exit: attempt.exitCode }, "re-adopted attempt");
    }
  }

  private checkpointError(attempt: Attempt) {
    return (error: unknown) =>
      this.log.warn({ err: error, attempt: attempt.key }, "checkpoint upload failed");
  }

  /** The attempts this agent runs of (job, task, attempt): one, or a gang's ranks here (or only `rank`). */
  private ranksOf(ref: { jobId: string; taskIndex: number; attempt: number; rank?: number }): Attempt[] {
    const found: Attempt[] = [];
    for (const attempt of this.attempts.values()) {
      const { spec } = attempt;
      if (spec.jobId !== ref.jobId || spec.taskIndex !== ref.taskIndex || spec.attempt !== ref.attempt)
        continue;
      if (ref.rank !== undefined && spec.gang?.rank !== ref.rank) continue;
      found.push(attempt);
    }
    return found;
  }

  private track(attempt: Attempt): void {
    this.attempts.set(attempt.key, attempt);
    this.byDir.set(attempt.dir, attempt);
  }

  private async startAttempt(spec: StartMessage): Promise<void> {
    const attempt = new Attempt(spec, this.context);
    if (this.attempts.has(attempt.key)) return;
    if (this.leaving) {
      // Placed here just before the server heard this pilot is leaving: it goes elsewhere, uncharged.
      this.report({
        ...ref(attempt),
        kind: "ended",
        outcome: "migrated",
        exitCode: null,
        reason: LEAVING_REASON,
        outputs: [],
      });
      return;
    }
    this.track(attempt);
    // Whom it runs as (--run-as, --run-as-owner): an owner with no local account fails it (like a
    // command that cannot run: the job's retries, not the system's), and it never runs as root.
    let user: JobUser | null;
    try {
      user = await accountFor(this.runAs, spec.owner);
    } catch (error) {
      const reason = error instanceof RunAsError ? error.message : `no account to run as: ${String(error)}`;
      attempt.ended = true;
      this.log.warn({ job: spec.jobId, owner: spec.owner, reason }, "attempt refused");
      this.report({ ...ref(attempt), kind: "ended", outcome: "failed", exitCode: null, reason, outputs: [] });
      return;
    }
    try {
      await attempt.prepare(user);
    } catch (error) {
      attempt.ended = true;
      this.report({
        ...ref(attempt),
        kind: "ended",
        outcome: "lost",
        exitCode: null,
        reason: `staging inputs failed: ${error instanceof Error ? error.message : String(error)}`,
        outputs: [],
        cause: "staging",
      });
      return;
    }
    if (attempt.launchRequest) {
      attempt.markLaunched();
      this.launcher.launch(attempt.launchRequest);
    }
  }

  private started(job: LaunchedJob): void {
    const attempt = this.byDir.get(job.dir);
    if (!attempt || attempt.pid !== null) return;
    attempt.markStarted(job, this.checkpointError(attempt));
    // A job whose exit came with its start (a short one) is reported once, by its end, and so is
    // one that ends within START_REPORT_DELAY_MS. A gang's rank reports its start at once: the
    // others wait for its coordinator's port.
    if (attempt.spec.gang) {
      this.reportStarted(attempt);
      return;
    }
    this.unreportedStarts.add(attempt);
    this.startReportTimer ??= setTimeout(() => this.reportStarts(), START_REPORT_DELAY_MS);
  }

  /** Reports the starts held back, of the attempts that have not ended meanwhile. */
  private reportStarts(): void {
    this.startReportTimer = null;
    for (const attempt of this.unreportedStarts) if (!attempt.ended) this.reportStarted(attempt);
    this.unreportedStarts.clear();
  }

  private reportStarted(attempt: Attempt): void {
    const pid = attempt.pid;
    if (pid === null) return;
    // Rank 0 of a gang tells the server the coordinator's port, and the other ranks start with it.
    const coordinator = attempt.spec.gang?.rank === 0 ? attempt.spec.gang.coordinator : null;
    const coordinatorPort = coordinator
      ? Number(coordinator.slice(coordinator.lastIndexOf(":") + 1))
      : undefined;
    this.report({ kind: "started", ...ref(attempt), pid, ...(coordinatorPort ? { coordinatorPort } : {}) });
  }

  private async exited(dir: string, code: number | null): Promise<void> {
    const attempt = this.byDir.get(dir);
    if (!attempt || attempt.ended) return;
    attempt.ended = true;
    const pilot = this.options.endsAt !== undefined;
    if (pilot && !this.leaving && code !== null && code > 128 && !attempt.stopping) {
      await new Promise((resolve) => setTimeout(resolve, SIGNALLED_END_HOLD_MS));
      if (this.leaving) await attempt.stop("migrated", this.leavingReason, 0);
    }
    const result = await attempt.finish(code);
    await this.flushAttemptLogs(attempt);
    this.report({ kind: "ended", ...ref(attempt), ...result });
  }

  /** Catches exits the launcher could not tell us of: attempts re-adopted after an agent restart. */
  private async pollExits(): Promise<void> {
    const now = Date.now();
    for (const attempt of this.attempts.values()) {
      if (attempt.ended) continue;
      const code = await attempt.readExitFile();
      if (code !== null) {
        await this.exited(attempt.dir, code);
        continue;
      }
      // A re-adopted attempt may have been launched just before the agent died: its supervisor
      // writes the pid soon, or never did.
      if (attempt.pid === null && attempt.adopted) await attempt.readPid();
      if ((attempt.pid === null && !attempt.adopted) || (await attempt.isAlive())) {
        this.missingSince.delete(attempt.key);
        continue;
      }
      const since = this.missingSince.get(attempt.key) ?? now;
      this.missingSince.set(attempt.key, since);
      if (now - since >= MISSING_EXIT_GRACE_MS) {
        this.missingSince.delete(attempt.key);
        await this.exited(attempt.dir, null);
      }
    }
  }

  /**
   * Forgets an attempt whose end the server has, once the messages that came with the
   * acknowledgement are handled: the starts a commit sends with the acknowledgements of the ends
   * it holds are prepared and launched first, and the ended attempts' folders and cgroups retired
   * after, off the way of the next jobs.
   */
  private forgetSoon(attempt: Attempt): void {
    this.acknowledged.add(attempt);
    this.forgetTimer ??= setImmediate(() => void this.forgetAcknowledged());
  }

  private async forgetAcknowledged(): Promise<void> {
    this.forgetTimer = null;
    for (const attempt of [...this.acknowledged]) {
      this.acknowledged.delete(attempt);
      await this.forget(attempt);
    }
  }

  private async forget(attempt: Attempt): Promise<void> {
    // Once: a reconnect's acknowledgement may come after the first one's.
    if (this.attempts.get(attempt.key) !== attempt) return;
    this.attempts.delete(attempt.key);
    this.byDir.delete(attempt.dir);
    await attempt.cleanup().catch(() => {});
  }

  private busySlots(): number {
    let busy = 0;
    for (const attempt of this.attempts.values()) if (!attempt.ended) busy += attempt.spec.cpus;
    return busy;
  }

  // ---- connection

  private connect(): void {
    if (this.stopped) return;
    const url = this.serverUrl().replace(/^http/, "ws") + AGENT_CONNECT_PATH;
    const ws: LinkSocket =
      this.options.localLink?.() ?? new WebSocket(url, { handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    this.ws = ws;
    this.welcomed = false;
    this.frames = null;
    ws.on("open", () => void this.sendHello(ws));
    ws.on("message", (data) => {
      let message: ServerMessage;
      try {
        const parsed: unknown = JSON.parse(String(data));
        const foreign = ofAnotherVersion(parsed, "welcome");
        if (foreign) {
          void this.leaveIncompatible(
            agentLeavesServer(this.serverUrl(), foreign, {
              version: PROTOCOL_VERSION,
              release: stewardRelease(),
            }),
          );
          return;
        }
        message = fromThisProcess(ws) ? (parsed as ServerMessage) : serverMessage.parse(parsed);
      } catch (error) {
        this.log.warn({ err: error }, "malformed server message");
        return;
      }
      if (message.type === "batch") for (const each of message.messages) void this.handle(ws, each);
      else void this.handle(ws, message);
    });
    ws.on("pong", () => {
      this.awaitingPongs = 0;
    });
    ws.on("close", () => this.disconnected(ws));
    ws.on("error", (error) => {
      // A certificate the agent does not trust is not a passing network problem: it says so plainly.
      const code = (error as NodeJS.ErrnoException).code;
      if (code && CERTIFICATE_ERROR_CODES.has(code)) {
        this.log.error(
          { server: this.serverUrl() },
          `the server's certificate is not trusted (${code}: ${error.message}); give its authority with --ca FILE or STEWARD_CA`,
        );
      } else this.log.debug({ err: error }, "connection error");
    });
  }

  private disconnected(ws: LinkSocket): void {
    if (this.ws !== ws) return;
    this.ws = null;
    this.welcomed = false;
    this.frames = null;
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.stopped) return;
    this.failures++;
    this.serverIndex++;
    const delay = reconnectDelayMs(this.failures, Math.random());
    this.log.info({ delayMs: delay }, "disconnected; reconnecting");
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  /** A server of another protocol version welcomed this agent: it says so and stops. */
  private async leaveIncompatible(message: string): Promise<void> {
    this.log.error({ server: this.serverUrl() }, message);
    await this.stop();
    this.options.onIncompatible?.(message);
  }

  private async sendHello(ws: LinkSocket): Promise<void> {
    const held = [...this.attempts.values()].map((attempt) => ({
      ...ref(attempt),
      state: attempt.ended ? ("ended" as const) : ("running" as const),
    }));
    this.send(ws, {
      type: "hello",
      v: PROTOCOL_VERSION,
      name: this.name,
      token: this.options.joinToken,
      ...(this.credential ? { credential: this.credential } : {}),
      pool: this.fixed.pool,
      slots: this.slots,
      labels: this.fixed.labels,
      facts: await this.facts(),
      attempts: held,
      ...(this.options.endsAt !== undefined ? { endsAt: this.options.endsAt } : {}),
      address: this.options.address ?? defaultAddress(),
      release: stewardRelease(),
      ...(this.leaving ? { leaving: true } : {}),
      batches: true,
    });
  }

  private async facts() {
    return readHostFacts(this.fixed, Math.max(0, this.slots - this.busySlots()));
  }

  private async handle(ws: LinkSocket, message: Exclude<ServerMessage, { type: "batch" }>): Promise<void> {
    switch (message.type) {
      case "welcome": {
        if (message.credential) {
          // Taken at once: the file requests of a start handled while it is being written need it.
          this.credential = message.credential;
          await writeHostCredential(this.options.workDir, message.credential);
        }
        for (const stale of message.kill) {
          if (stale.rank === undefined) this.outbox.dropAttempt(stale.jobId, stale.taskIndex, stale.attempt);
          for (const attempt of this.ranksOf(stale)) {
            attempt.kill();
            attempt.ended = true;
            await this.forget(attempt);
          }
        }
        this.welcomed = true;
        this.frames =
          message.batches === true
            ? new TurnFrames((text) => {
                if (ws.readyState === LINK_STATES.OPEN) ws.send(text);
              })
            : null;
        this.maxLogBytes = message.maxLogBytes ?? Number.POSITIVE_INFINITY;
        this.failures = 0;
        this.awaitingPongs = 0;
        if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
        this.heartbeatTimer = setInterval(() => void this.heartbeat(ws), message.heartbeatSeconds * 1000);
        // Logs first, so that the server has an attempt's whole output before it hears of its end.
        for (const attempt of this.attempts.values()) await this.flushAttemptLogs(attempt, true);
        for (const report of this.outbox.all()) this.send(ws, report);
        this.log.info(
          { server: this.serverUrl(), resent: this.outbox.size, killed: message.kill.length },
          "attached",
        );
        return;
      }
      case "reject":
        this.log.error({ reason: message.reason }, "server rejected this agent");
        await this.stop();
        this.options.onRejected?.(message.reason);
        return;
      case "ack": {
        const report = this.outbox.ack(message.seq);
        if (report?.event.kind === "ended") {
          const attempt = this.attempts.get(attemptKeyOf(report.event));
          if (attempt) this.forgetSoon(attempt);
        }
        return;
      }
      case "start":
        await this.startAttempt(message);
        return;
      case "stop": {
        // Every rank of the attempt this host runs.
        for (const attempt of this.ranksOf(message))
          await attempt.stop(message.outcome, message.reason, message.graceSeconds);
        return;
      }
    }
  }

  private async heartbeat(ws: LinkSocket): Promise<void> {
    if (ws.readyState !== LINK_STATES.OPEN) return;
    if (this.awaitingPongs >= MISSED_PONGS) {
      this.log.warn("no answer from the server; reconnecting");
      ws.terminate();
      return;
    }
    this.awaitingPongs++;
    ws.ping();
    const progress = [];
    const requirements = [];
    for (const attempt of this.attempts.values()) {
      if (attempt.ended) continue;
      const fraction = await attempt.readProgress();
      if (fraction !== null) progress.push({ ...ref(attempt), fraction });
      // Sent while the file exists (a heartbeat may be lost); the server acts once per text.
      const text = await attempt.readRequirements();
      if (text !== null) requirements.push({ ...ref(attempt), text });
    }
    this.send(ws, { type: "heartbeat", facts: await this.facts(), progress, requirements });
  }

  private report(event: ReportEvent): void {
    const message = this.outbox.add(event);
    if (this.ws && this.welcomed) this.send(this.ws, message);
  }

  /**
   * Sends a message: a report or a heartbeat with the others of this turn where the server reads
   * batches; anything else as a frame of its own, after what waits (the order stays the order sent).
   */
  private send(ws: LinkSocket, message: AgentMessage): void {
    if (ws.readyState !== LINK_STATES.OPEN) return;
    const frames = ws === this.ws ? this.frames : null;
    if (frames && (message.type === "report" || message.type === "heartbeat")) frames.add(message);
    else {
      frames?.flush();
      ws.send(JSON.stringify(message));
    }
  }

  // ---- logs

  private async flushLogs(): Promise<void> {
    if (!this.ws || !this.welcomed) return;
    for (const attempt of this.attempts.values()) await this.flushAttemptLogs(attempt);
  }

  /**
   * Sends the bytes of stdout and stderr written since the last flush (all of them with
   * `fromStart`). One flush of an attempt at a time: the timer's, a reconnect's and an end's.
   */
  private flushAttemptLogs(attempt: Attempt, fromStart = false): Promise<void> {
    const previous = this.logFlushes.get(attempt.key) ?? Promise.resolve();
    const next = previous
      .catch(() => {})
      .then(() => this.flushAttemptLogsNow(attempt, fromStart))
      .finally(() => {
        if (this.logFlushes.get(attempt.key) === next) this.logFlushes.delete(attempt.key);
      });
    this.logFlushes.set(attempt.key, next);
    return next;
  }

  private async flushAttemptLogsNow(attempt: Attempt, fromStart: boolean): Promise<void> {
    if (fromStart) {
      attempt.sent.stdout = 0;
      attempt.sent.stderr = 0;
    }
    for (const stream of ["stdout", "stderr"] as const) {
      const path = stream === "stdout" ? attempt.stdoutPath : attempt.stderrPath;
      // Synchronous, like the folder's making: most ends have nothing new to send.
      const info = statSync(path, { throwIfNoEntry: false });
      // One byte past the server's limit tells it the log went on (it writes its marker then).
      const size = Math.min(info?.size ?? 0, this.maxLogBytes + 1);
      if (size <= attempt.sent[stream]) continue;
      const ws = this.ws;
      if (!ws || !this.welcomed || ws.readyState !== LINK_STATES.OPEN) return;
      const handle = await open(path, "r");
      try {
        while (attempt.sent[stream] < size) {
          // The offset is taken before the read: another flush of this attempt (a reconnect's
          // resend, an end) may move `sent` meanwhile, and these bytes belong where they were read.
          const offset = attempt.sent[stream];
          const length = Math.min(LOG_CHUNK_BYTES, size - offset);
          const buffer = Buffer.alloc(length);
          const { bytesRead } = await handle.read(buffer, 0, length, offset);
          if (bytesRead === 0) break;
          this.send(ws, {
            type: "log",
            ...ref(attempt),
            stream,
            offset,
            data: buffer.subarray(0, bytesRead).toString("base64"),
          });
          attempt.sent[stream] = Math.max(attempt.sent[stream], offset + bytesRead);
        }
      } finally {
        await handle.close();
      }
    }
  }
}

function ref(attempt: Attempt) {
  const { jobId, taskIndex, attempt: number, gang } = attempt.spec;
  return { jobId, taskIndex, attempt: number, ...(gang ? { rank: gang.rank } : {}) };
}
