// Puts the broker together: store -> recover -> core -> HTTP API + agent gateway, and takes it apart.

import { tmpdir } from "node:os";
import { join } from "node:path";
import multipart from "@fastify/multipart";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import type { Logger } from "pino";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { warmUpExpressions } from "../../common/model/cel.ts";
import { parseJobFileText } from "../../common/model/jobfile-text.ts";
import type { PoolSpec } from "../../common/model/pools-file.ts";
import type { QosPolicy } from "../../common/model/qos-file.ts";
import type { LinkSocket } from "../../common/protocol/local-link.ts";
import { DEFAULT_BODY_TIMEOUT_SECONDS, watchBodyTimeouts } from "../api/body-timeout.ts";
import { keepJobFileText } from "../api/job-file-source.ts";
import { trackRequests } from "../api/last-resort.ts";
import type { RateLimit } from "../api/rate-limit.ts";
import { registerApi } from "../api/register.ts";
import { DEFAULT_MAX_UPLOAD_MB, MAX_JOB_FILE_BYTES } from "../api/upload-limit.ts";
import { startBackup } from "../backup/backup.ts";
import { GatedBlobStore } from "../backup/deletion-gate.ts";
import { SlurmDriver } from "../drivers/slurm.ts";
import { resolvePoolAccounts } from "../pools/pilot-account.ts";
import { metaLedger } from "../pools/pilot-ledger.ts";
import { PoolManager } from "../pools/pool-manager.ts";
import { NotLeaderError } from "../reactor/errors.ts";
import { policyOf } from "../scheduler/policy.ts";
import type { MetaschedulingPolicy } from "../scheduler/view.ts";
import type { FairShareSettings } from "../state/owner-usage.ts";
import type { BlobStore } from "../store/blobs.ts";
import type { Store } from "../store/store.ts";
import { STORE_RETRY_AFTER_SECONDS, StoreUnavailableError } from "../store/store-unavailable.ts";
import { defaultAdvertiseUrl, isWildcardAddress, machineFacts } from "./advertise-url.ts";
import { Broker, DEFAULT_LEASE_SECONDS, leadingCore, leadingPorts } from "./broker.ts";
import type { Core } from "./core.ts";
import { AgentGateway } from "./gateway.ts";
import { jobFilesIn } from "./job-files.ts";
import { JobMetrics } from "./job-metrics.ts";
import { StoreMetrics } from "./store-metrics.ts";

export const DEFAULT_PORT = 4780;
/** The `steward` executable pilots run (this checkout's). */
const STEWARD_BIN = join(import.meta.dirname, "..", "..", "..", "bin", "steward");
export const DEFAULT_HEARTBEAT_SECONDS = 2;
export const DEFAULT_HOST_TIMEOUT_SECONDS = 10;

export interface ServerOptions {
  store: Store;
  blobs: BlobStore;
  host?: string;
  port?: number;
  adminToken: string;
  joinToken: string;
  heartbeatSeconds?: number;
  hostTimeoutSeconds?: number;
  /** Preemption and rescheduling settings; absent fields take the papers' defaults. */
  policy?: Partial<MetaschedulingPolicy>;
  /** PostgreSQL: how long a leader's lease lasts unless renewed (default 2 s). */
  leaseSeconds?: number;
  /** Pools backed by a batch system (`--pools FILE`), and where their pilots keep logs and work. */
  pools?: readonly PoolSpec[];
  /** The QoS tiers and groups' limits (`--qos FILE`); absent: the one tier `normal`, no limits. */
  qos?: QosPolicy;
  pilotDir?: string;
  /**
   * Folders no pilot account may reach (the data folder, the blobs folder): a pool whose pilots run
   * as another account is refused while one of them is open to other accounts.
   */
  privateDirs?: readonly string[];
  /** The largest file a request may bring (`--max-upload-mb`, default 4096). */
  maxUploadMb?: number;
  /** An attempt's stdout and stderr are kept up to this many MB each (`--max-log-mb`, default 1024). */
  maxLogMb?: number;
  /** Submits per user token (`--submit-rate`, `--submit-burst`); admins are not limited. */
  submitLimit?: RateLimit;
  /** A request body that pauses this long is dropped with 408 (`--body-timeout-seconds`, default 60). */
  bodyTimeoutSeconds?: number;
  /**
   * The URL other hosts reach this server at (`--advertise-url`, already checked): in redirects,
   * the leader record, pilots' --server and /healthz. Default: see defaultAdvertiseUrl.
   */
  advertiseUrl?: string;
  /** Files a backup holds besides the records and blobs (the data folder's start tokens). */
  backupFiles?: readonly string[];
  /** HTTPS and WSS on the port (`--tls-cert`, `--tls-key`: PEM contents). */
  tls?: { cert: string; key: string };
  /** /metrics without a token (`--metrics-open`); by default it takes an API token of any role. */
  metricsOpen?: boolean;
  /** Removed jobs' accounting rows are kept this many days after their end (`--accounting-days`, default 365). */
  accountingDays?: number;
  /** The shares tree and the usage half-life (`--shares`, `--fair-share-half-life`). */
  fairShare?: Partial<FairShareSettings>;
  log: Logger;
}

export interface RunningServer {
  /** The advertised URL: how other hosts reach this server. */
  url: string;
  /** How this machine reaches it (the listen address, or loopback for a wildcard one): for `up`'s own agents. */
  localUrl: string;
  /** A link to this server for an agent in the same process (`up`'s own): no socket in between. */
  localAgentLink(): LinkSocket;
  port: number;
  core: Core;
  app: FastifyInstance;
  close(): Promise<void>;
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const heartbeatSeconds = options.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS;
  const hostTimeoutSeconds = options.hostTimeoutSeconds ?? DEFAULT_HOST_TIMEOUT_SECONDS;
  const { store, log } = options;
  // Deletions of blobs wait while a backup copies them (src/broker/backup/deletion-gate.ts).
  const blobs = new GatedBlobStore(options.blobs);
  // Before anything starts: a pool whose pilots would run as this broker's account is refused.
  const poolAccounts = resolvePoolAccounts(options.pools ?? [], options.privateDirs ?? []);
  for (const warning of poolAccounts.warnings) log.warn({ pool: warning.pool }, warning.message);

  await store.open();
  // The core runs only while this server leads (always on SQLite; on PostgreSQL, by election).
  let gateway: AgentGateway | null = null;
  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics });
  const jobMetrics = new JobMetrics(metrics);
  const storeMetrics = new StoreMetrics(metrics);
  const broker = new Broker({
    store,
    blobs,
    heartbeatSeconds,
    hostTimeoutSeconds,
    leaseSeconds: options.leaseSeconds ?? DEFAULT_LEASE_SECONDS,
    policy: options.policy,
    accountingDays: options.accountingDays,
    qos: options.qos,
    fairShare: options.fairShare,
    poolFolders: (options.pools ?? []).flatMap((pool) => pool.shared),
    log,
    onDemoted: () => {
      gateway?.disconnectAll();
      jobMetrics.unwatch();
    },
    onLeading: (core) => jobMetrics.watch(core.reactor),
    onCommitted: (seconds, steps) => storeMetrics.committed(seconds, steps),
  });
  const core = leadingCore(broker);

  const submitted = new Counter({
    name: "steward_jobs_submitted_total",
    help: "Jobs accepted",
    registers: [metrics],
  });
  new Gauge({
    name: "steward_jobs",
    help: "Jobs by state",
    labelNames: ["state"],
    registers: [metrics],
    collect() {
      this.reset();
      if (broker.isLeader)
        for (const [state, count] of core.read.jobCountsByState()) this.set({ state }, count);
    },
  });
  new Gauge({
    name: "steward_hosts",
    help: "Hosts by state",
    labelNames: ["state"],
    registers: [metrics],
    collect() {
      this.reset();
      if (broker.isLeader) for (const host of core.read.listHosts()) this.inc({ state: host.state });
    },
  });
  new Gauge({
    name: "steward_store_up",
    help: "1 while this server's store answers its calls, 0 while it is unavailable (stopped, cut off, stalled)",
    registers: [metrics],
    collect() {
      this.set(broker.storeVerdict().up ? 1 : 0);
    },
  });
  new Counter({
    name: "steward_store_unavailable_total",
    help: "Calls of this server to its store that failed because the store could not be reached or did not answer in time",
    registers: [metrics],
    collect() {
      this.reset();
      this.inc(broker.storeFailures);
    },
  });
  new Gauge({
    name: "steward_store_commits",
    help: "Group commits made since start",
    registers: [metrics],
    collect() {
      this.set(broker.commits);
    },
  });

  const maxUploadBytes = (options.maxUploadMb ?? DEFAULT_MAX_UPLOAD_MB) * 1024 * 1024;
  const app: FastifyInstance = Fastify({
    ...(options.tls ? { https: { cert: options.tls.cert, key: options.tls.key } } : {}),
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 64 * 1024 * 1024,
  });
  trackRequests(app);
  const bodyTimeoutSeconds = options.bodyTimeoutSeconds ?? DEFAULT_BODY_TIMEOUT_SECONDS;
  watchBodyTimeouts(app.server, bodyTimeoutSeconds, (request) =>
    log.warn(
      { method: request.method, url: request.url, remote: request.socket.remoteAddress },
      `request body stopped arriving for ${bodyTimeoutSeconds} s: answered 408 and closed`,
    ),
  );
  await app.register(multipart, {
    // A file over the limit is refused by the route (413, naming the limit), before the parser's own.
    limits: { fileSize: maxUploadBytes + 1, files: 100_000, fieldSize: MAX_JOB_FILE_BYTES },
  });
  app.addContentTypeParser("application/octet-stream", (_request, payload, done) => done(null, payload));
  // A job file as YAML, as on disk (the dashboard sends what was pasted); a bad one answers 400.
  app.addContentTypeParser(
    ["application/yaml", "application/x-yaml", "text/yaml"],
    { parseAs: "string" },
    (request, body, done) => {
      try {
        // Kept for the 400 of a bad job file: its field's line and column.
        keepJobFileText(request, String(body));
        done(null, parseJobFileText(String(body)));
      } catch (error) {
        done(error as Error, undefined);
      }
    },
  );

  app.addHook("onResponse", async (request, reply) => {
    if (request.method === "POST" && request.url === "/api/v1/jobs" && reply.statusCode === 201)
      submitted.inc();
  });

  // A standby sends API requests to the leader (307, the client follows with its token), or answers
  // 503 while no leader is known; health, metrics and the OpenAPI document answer everywhere (metrics
  // with a token, unless --metrics-open).
  // Until the first election round is done (the store loaded, the lead taken or not), requests wait
  // for it: a server that is about to lead does not answer "standby" to its first callers.
  let firstRoundDone: () => void = () => {};
  const firstRound = new Promise<void>((resolve) => {
    firstRoundDone = resolve;
  });
  app.addHook("onRequest", async (request, reply) => {
    await firstRound;
    if (broker.isLeader) return;
    const path = request.url.split("?")[0];
    if (!path.startsWith("/api/v1/") || path === "/api/v1/openapi.json") return;
    const leader = broker.leader;
    if (leader)
      return reply
        .code(307)
        .header("location", leader + request.url)
        .send();
    // No leader: because the store does not answer (no server can lead until it does), or not yet.
    const store = broker.storeVerdict();
    if (!store.up)
      return reply
        .code(503)
        .header("retry-after", String(STORE_RETRY_AFTER_SECONDS))
        .send({
          error: { code: "store_unavailable", message: new StoreUnavailableError(store.reason).message },
        });
    return reply
      .code(503)
      .header("retry-after", "1")
      .send({ error: { code: "standby", message: new NotLeaderError(null).message } });
  });

  let listening = "";
  const pools = new PoolManager({
    pools: options.pools ?? [],
    drivers: { slurm: new SlurmDriver() },
    cluster: {
      state: () => (broker.isLeader ? core.read.cluster : null),
      ledger: () => (broker.isLeader ? metaLedger(core) : null),
      forgetHost: async (name) => {
        if (broker.isLeader) await core.forgetHost(name);
      },
    },
    serverUrl: () => listening,
    joinToken: options.joinToken,
    accounts: poolAccounts.accounts,
    steward: STEWARD_BIN,
    pilotDir: options.pilotDir ?? join(tmpdir(), "steward-pilots"),
    walltimeMarginSeconds: policyOf(options.policy).walltimeMarginSeconds,
    log,
  });

  gateway = new AgentGateway({
    ports: core,
    blobs,
    joinToken: options.joinToken,
    heartbeatSeconds,
    maxLogMb: options.maxLogMb,
    log,
    leading: () => (broker.isLeader ? null : (broker.leader ?? "")),
    storeDown: () => {
      const store = broker.storeVerdict();
      return store.up ? null : store.reason;
    },
  });
  // The agents' sockets are the links of whichever core leads.
  broker.setLinks(gateway);
  await registerApi(app, {
    ports: leadingPorts(broker, store, (job) => pools.explain(job)),
    files: jobFilesIn(blobs),
    metrics,
    adminToken: options.adminToken,
    joinToken: options.joinToken,
    health: () => broker.health(),
    maxUploadBytes,
    submitLimit: options.submitLimit,
    pools: () => pools.status(),
    metricsOpen: options.metricsOpen,
    backup: () => startBackup(store, blobs, options.backupFiles ?? []),
  });

  app.server.on("upgrade", (request, socket, head) => {
    if (!gateway.handleUpgrade(request, socket, head)) socket.destroy();
  });

  warmUpExpressions({
    name: "warm-up",
    pool: "default",
    os: "linux",
    arch: "x86_64",
    cpus: 1,
    memoryMb: 1,
    memFreeMb: 1,
    load1: 0,
    cpuFree: 1,
    diskFreeMb: 1,
    speed: 1,
    labels: {},
    slotsFree: 1,
  });
  await app.listen({ host: options.host ?? "127.0.0.1", port: options.port ?? DEFAULT_PORT });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : (options.port ?? DEFAULT_PORT);
  const scheme = options.tls ? "https" : "http";
  const listenHost = options.host ?? "127.0.0.1";
  const localUrl = isWildcardAddress(listenHost)
    ? `${scheme}://127.0.0.1:${port}`
    : defaultAdvertiseUrl({ scheme, listenHost, port, hostName: "", fullName: null, addresses: [] }).url;
  let url = options.advertiseUrl;
  if (url === undefined) {
    const choice = defaultAdvertiseUrl({ scheme, listenHost, port, ...(await machineFacts()) });
    if (choice.warning) log.warn({ advertiseUrl: choice.url }, choice.warning);
    url = choice.url;
  }
  listening = url;
  try {
    await broker.start(url);
  } finally {
    firstRoundDone();
  }
  pools.start();
  log.info({ url, ...broker.health() }, "steward server listening");

  return {
    url,
    localUrl,
    localAgentLink: () => {
      if (!gateway) throw new Error("the server is not started");
      return gateway.acceptLocal();
    },
    port,
    core,
    app,
    async close() {
      pools.stop();
      await broker.stop();
      gateway?.close();
      await app.close();
      await store.close();
    },
  };
}
