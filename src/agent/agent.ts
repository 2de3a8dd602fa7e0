// The host daemon: connects to any server in its list, says hello with what it holds, heartbeats,
// runs attempts through the launcher, streams their logs, and reports through an outbox that is
// resent until acknowledged. Attempts outlive the agent: a restarted agent with the same work
// folder re-adopts them, and learns the exit of those that ended while it was away.

import { mkdir, readdir } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { newTokenOf } from "../common/model/tokens.ts";
import { AGENT_TRANSFERS } from "../common/model/transfers.ts";
import type { LinkSocket } from "../common/protocol/local-link.ts";
import {
  type AgentMessage,
  CACHE_HELD_MAX,
  PROTOCOL_VERSION,
  type ReportEvent,
  type StartMessage,
} from "../common/protocol/messages.ts";
import { stewardRelease } from "../common/protocol/versions.ts";
import { monotonicMs } from "../common/time/clocks.ts";
import { HttpClient } from "../common/transport/http-client.ts";
import { accountFor, type JobUser, type RunAs, RunAsError, runAsNotice } from "./accounts/run-as.ts";
import { type AgentOptions, defaultAddress } from "./agent-options.ts";
import { Attempt, type AttemptContext } from "./attempt/attempt.ts";
import { lockWorkFolder } from "./attempt/attempt-folder.ts";
import { attemptKeyOf, attemptRef } from "./attempt/attempt-identity.ts";
import { HeldAttempts } from "./attempt/held-attempts.ts";
import { LOG_FLUSH_MS, LogShipper } from "./attempt/log-shipper.ts";
import { SPARE_FOLDERS_MAX, SpareFolders } from "./attempt/spare-folders.ts";
import { StartReports } from "./attempt/start-reports.ts";
import { workingFolderRefusal } from "./attempt/working-folder.ts";
import { ContentCache, DEFAULT_CACHE_GB, GIB } from "./cache/content-cache.ts";
import { HeldReport } from "./cache/held-summary.ts";
import { chooseEnforcement, isolatesGpus, removeBase, sweepCgroups } from "./cgroups/enforcement.ts";
import { readHostCredential, writeHostCredential } from "./connection/host-credential.ts";
import { Outbox } from "./connection/outbox.ts";
import { type OneServerMessage, ServerLink } from "./connection/server-link.ts";
import { openContainerHost } from "./containers/container-host.ts";
import { stagingFailure } from "./host/disk-space.ts";
import { DiskWatch } from "./host/disk-watch.ts";
import { readHostFacts, type StaticFacts } from "./host/facts.ts";
import { declaredGpus } from "./host/gpus.ts";
import { hostSpeed } from "./host/speed.ts";
import { chooseLauncher, type LaunchedJob, Launcher, launcherCacheWarning } from "./launcher/launcher.ts";

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

/** How often attempts are checked for an exit the launcher did not tell us of (re-adopted ones). */
const EXIT_POLL_MS = 250;
/** A job whose process is gone with no exit recorded is given this long before it counts as lost. */
const MISSING_EXIT_GRACE_MS = 2000;

export class Agent {
  readonly name: string;
  readonly slots: number;
  private readonly options: AgentOptions;
  private readonly fixed: StaticFacts;
  private readonly context: AttemptContext;
  /** Attempts this agent holds: running, or ended with the end not yet acknowledged. */
  private readonly attempts = new HeldAttempts();
  private readonly outbox = new Outbox();
  /** What the cache's summary each connection last carried (cache/held-summary.ts). */
  private readonly heldReport = new HeldReport();
  private readonly launcher: Launcher;
  private readonly missingSince = new Map<string, number>();
  private readonly startReports = new StartReports((event) => this.report(event));
  private timers: NodeJS.Timeout[] = [];
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
  private readonly link: ServerLink;
  private readonly logs: LogShipper;
  /** The work folder's free space: a full one takes no new work (host/disk-watch.ts). */
  private readonly disk: DiskWatch;

  constructor(options: AgentOptions) {
    this.options = options;
    this.name = options.name ?? os.hostname();
    this.slots = options.slots ?? os.availableParallelism();
    this.log = options.log.child({ agent: this.name });
    this.runAs = options.runAs ?? { kind: "self" };
    this.link = new ServerLink(
      {
        servers: options.servers,
        log: this.log,
        ...(options.localLink ? { localLink: options.localLink } : {}),
      },
      {
        hello: () => this.hello(),
        message: (ws, message) => this.handle(ws, message),
        heartbeat: (ws) => this.heartbeat(ws),
        incompatible: (message) => void this.leaveIncompatible(message),
      },
    );
    this.logs = new LogShipper(this.link);
    this.fixed = {
      name: this.name,
      pool: options.pool ?? "default",
      labels: options.labels ?? {},
      speed: options.speed ?? hostSpeed(),
      workDir: options.workDir,
      shared: options.shared ?? [],
      transfers: [...AGENT_TRANSFERS],
    };
    this.context = {
      // The host credential once it has one; the join token before.
      http: new HttpClient({
        baseUrl: () => this.link.serverUrl(),
        token: () => this.credential ?? options.joinToken,
        // A standby's redirect is followed to another server of the list only: the token stays among them.
        redirectOrigins: options.servers,
        serversName: "--server",
      }),
      cache: new ContentCache(join(options.workDir, "cache"), (options.cacheGb ?? DEFAULT_CACHE_GB) * GIB),
      hostName: this.name,
      workDir: options.workDir,
      ...(options.jobUmask !== undefined ? { jobUmask: options.jobUmask } : {}),
      spares: new SpareFolders(options.workDir, Math.max(SPARE_FOLDERS_MAX, 2 * this.slots)),
      launcher: chooseLauncher(process.env.STEWARD_LAUNCHER),
    };
    this.launcher = new Launcher(join(options.workDir, "attempts"), this.context.launcher);
    this.disk = new DiskWatch(options.workDir, this.context.cache, options.minFreeDiskMb, this.log);
  }

  async start(): Promise<void> {
    await mkdir(join(this.options.workDir, "attempts"), { recursive: true, mode: 0o700 });
    this.context.spares.load();
    await this.context.cache.load();
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
    const chosen = chooseEnforcement(
      this.options.enforce !== false,
      this.name,
      this.options.workDir,
      gpus.length > 0,
    );
    this.log[chosen.notice.warn ? "warn" : "info"](chosen.notice.message);
    this.context.enforcement = chosen.enforcement;
    this.fixed.enforces = chosen.enforcement !== null;
    if (this.options.gpus !== undefined)
      this.log.info(`gpus: ${gpus.length > 0 ? gpus.join(",") : "none found"}`);
    if (gpus.length > 0) {
      this.fixed.gpus = gpus;
      this.context.gpus = gpus;
      this.fixed.gpusIsolated = isolatesGpus(chosen.enforcement);
      if (!this.fixed.gpusIsolated)
        this.log.warn(
          `gpus: attempts are not kept from the GPUs not given to them (${chosen.enforcement ? "cgroup v2 has no devices controller" : "no cgroups"}): a job can open any of this host's GPUs; CUDA_VISIBLE_DEVICES names its own. steward hosts shows it`,
        );
    }
    if (Object.keys(this.options.resources ?? {}).length > 0) this.fixed.resources = this.options.resources;
    if (this.fixed.shared.length > 0) this.log.info(`shared folders: ${this.fixed.shared.join(", ")}`);
    this.context.containers = openContainerHost(this.options.containerRuntime, this.fixed, this.log);
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
    this.timers.push(setInterval(() => void this.logs.flushAll(this.attempts.values()), LOG_FLUSH_MS));
    this.timers.push(setInterval(() => void this.pollExits(), EXIT_POLL_MS));
    const { idleSeconds, onIdle } = this.options;
    if (idleSeconds !== undefined && onIdle) {
      let idleSince = monotonicMs();
      this.timers.push(
        setInterval(() => {
          if (this.attempts.size > 0) {
            idleSince = monotonicMs();
            return;
          }
          if (monotonicMs() - idleSince < idleSeconds * 1000) return;
          // The socket closes first: the server stops placing work here before the process goes.
          void this.stop().then(onIdle);
        }, 1000),
      );
    }
    this.link.connect();
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
    const deadline = monotonicMs() + timeoutMs;
    while ((this.attempts.size > 0 || this.outbox.size > 0) && monotonicMs() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await this.stop(true);
  }

  /** Stops talking to the server. Attempts go on running unless `killAttempts`, to be re-adopted. */
  async stop(killAttempts = false): Promise<void> {
    this.link.halt();
    for (const timer of this.timers) clearInterval(timer);
    this.startReports.stop();
    await this.attempts.forgetWaiting();
    if (killAttempts) for (const attempt of this.attempts.values()) attempt.kill();
    // An agent that holds no attempt leaves no cgroup of its own behind.
    if (this.context.enforcement && this.attempts.size === 0) removeBase(this.context.enforcement);
    this.launcher.close();
    this.link.close();
  }

  // ---- attempts

  private async adoptAttempts(): Promise<void> {
    const root = join(this.options.workDir, "attempts");
    for (const entry of await readdir(root)) {
      const attempt = await Attempt.adopt(join(root, entry), this.context);
      if (!attempt) continue;
      this.attempts.track(attempt);
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

  private async startAttempt(spec: StartMessage): Promise<void> {
    const attempt = new Attempt(spec, this.context);
    if (this.attempts.byKey(attempt.key) !== undefined) return;
    if (this.leaving) {
      // Placed here just before the server heard this pilot is leaving: it goes elsewhere, uncharged.
      this.report({
        ...attemptRef(attempt.spec),
        kind: "ended",
        outcome: "migrated",
        exitCode: null,
        reason: LEAVING_REASON,
        outputs: [],
      });
      return;
    }
    this.attempts.track(attempt);
    // Whom it runs as (--run-as, --run-as-owner): an owner with no local account fails it (like a
    // command that cannot run: the job's retries, not the system's), and it never runs as root. A
    // job run in place fails the same when that account may not enter its folder (working-folder.ts).
    let user: JobUser | null = null;
    let reason: string | null;
    try {
      user = await accountFor(this.runAs, spec.owner);
      reason = spec.workdir === undefined ? null : await workingFolderRefusal(spec.workdir, user);
    } catch (error) {
      reason = error instanceof RunAsError ? error.message : `no account to run as: ${String(error)}`;
    }
    if (reason !== null) {
      attempt.ended = true;
      this.log.warn({ job: spec.jobId, owner: spec.owner, reason }, "attempt refused");
      this.report({
        ...attemptRef(attempt.spec),
        kind: "ended",
        outcome: "failed",
        exitCode: null,
        reason,
        outputs: [],
      });
      return;
    }
    try {
      // Sent before the server heard the folder is full: it goes elsewhere, as a system failure.
      this.disk.refuseWhenFull();
      await attempt.prepare(user);
    } catch (error) {
      attempt.ended = true;
      this.report({
        ...attemptRef(attempt.spec),
        kind: "ended",
        outcome: "lost",
        exitCode: null,
        reason: `staging inputs failed: ${stagingFailure(error, this.options.workDir)}`,
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
    const attempt = this.attempts.byDir(job.dir);
    if (!attempt || attempt.pid !== null) return;
    attempt.markStarted(job, this.checkpointError(attempt));
    this.startReports.started(attempt);
  }

  private async exited(dir: string, code: number | null): Promise<void> {
    const attempt = this.attempts.byDir(dir);
    if (!attempt || attempt.ended) return;
    attempt.ended = true;
    const pilot = this.options.endsAt !== undefined;
    if (pilot && !this.leaving && code !== null && code > 128 && !attempt.stopping) {
      await new Promise((resolve) => setTimeout(resolve, SIGNALLED_END_HOLD_MS));
      if (this.leaving) await attempt.stop("migrated", this.leavingReason, 0);
    }
    const result = await attempt.finish(code);
    await this.logs.flush(attempt);
    this.report({ kind: "ended", ...attemptRef(attempt.spec), ...result });
  }

  /** Catches exits the launcher could not tell us of: attempts re-adopted after an agent restart. */
  private async pollExits(): Promise<void> {
    const now = monotonicMs();
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

  // ---- connection

  /** A server of another protocol version welcomed this agent: it says so and stops. */
  private async leaveIncompatible(message: string): Promise<void> {
    this.log.error({ server: this.link.serverUrl() }, message);
    await this.stop();
    this.options.onIncompatible?.(message);
  }

  private async hello(): Promise<AgentMessage> {
    const held = [...this.attempts.values()].map((attempt) => ({
      ...attemptRef(attempt.spec),
      state: attempt.ended ? ("ended" as const) : ("running" as const),
    }));
    return {
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
    };
  }

  private async facts() {
    return readHostFacts(
      this.fixed,
      Math.max(0, this.slots - this.attempts.busySlots()),
      await this.disk.read(),
    );
  }

  private async handle(ws: LinkSocket, message: OneServerMessage): Promise<void> {
    switch (message.type) {
      case "welcome": {
        if (message.credential) {
          // Taken at once: the file requests of a start handled while it is being written need it.
          this.credential = message.credential;
          await writeHostCredential(this.options.workDir, message.credential);
        }
        for (const stale of message.kill) {
          if (stale.rank === undefined) this.outbox.dropAttempt(stale.jobId, stale.taskIndex, stale.attempt);
          for (const attempt of this.attempts.ranksOf(stale)) {
            attempt.kill();
            attempt.ended = true;
            await this.attempts.forget(attempt);
          }
        }
        this.link.attach(ws, message);
        this.logs.maxLogBytes = message.maxLogBytes ?? Number.POSITIVE_INFINITY;
        // Logs first, so that the server has an attempt's whole output before it hears of its end.
        for (const attempt of this.attempts.values()) await this.logs.flush(attempt, true);
        for (const report of this.outbox.all()) this.link.send(ws, report);
        this.log.info(
          { server: this.link.serverUrl(), resent: this.outbox.size, killed: message.kill.length },
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
          const attempt = this.attempts.byKey(attemptKeyOf(report.event));
          if (attempt) this.attempts.forgetSoon(attempt);
        }
        return;
      }
      case "start":
        await this.startAttempt(message);
        return;
      case "stop": {
        // Every rank of the attempt this host runs.
        for (const attempt of this.attempts.ranksOf(message))
          await attempt.stop(message.outcome, message.reason, message.graceSeconds);
        return;
      }
    }
  }

  private async heartbeat(ws: LinkSocket): Promise<AgentMessage> {
    const progress = [];
    const requirements = [];
    for (const attempt of this.attempts.values()) {
      if (attempt.ended) continue;
      const fraction = await attempt.readProgress();
      if (fraction !== null) progress.push({ ...attemptRef(attempt.spec), fraction });
      // Sent while the file exists (a heartbeat may be lost); the server acts once per text.
      const text = await attempt.readRequirements();
      if (text !== null) requirements.push({ ...attemptRef(attempt.spec), text });
    }
    const cache = this.context.cache.counters;
    // What the cache holds, when this connection has not carried it yet (held-summary.ts).
    const cacheHeld = this.heldReport.next(ws, this.context.cache.held(CACHE_HELD_MAX));
    const facts = await this.facts();
    return { type: "heartbeat", facts, progress, requirements, cache, ...(cacheHeld ? { cacheHeld } : {}) };
  }

  private report(event: ReportEvent): void {
    this.link.sendWhenWelcomed(this.outbox.add(event));
  }
}
