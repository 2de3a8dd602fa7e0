// Puts the broker together: store -> recover -> core -> HTTP API + agent gateway, and takes it apart.

import multipart from "@fastify/multipart";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  LogController,
} from "fastify";
import type { Logger } from "pino";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { JobFileError } from "../model/jobfile.ts";
import type { BlobStore } from "../store/blobs.ts";
import { GroupCommitter } from "../store/group-commit.ts";
import type { Store } from "../store/store.ts";
import { bearerToken, safeEqual } from "./auth.ts";
import { ConflictError, Core, InvalidRequestError, NotFoundError } from "./core.ts";
import { AgentGateway } from "./gateway.ts";
import { registerAgentFileRoutes } from "./routes/agent-files.ts";
import { registerHostRoutes } from "./routes/hosts.ts";
import { registerJobRoutes } from "./routes/jobs.ts";
import { registerSystemRoutes } from "./routes/system.ts";

export const DEFAULT_PORT = 4780;
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
  log: Logger;
}

export interface RunningServer {
  url: string;
  port: number;
  core: Core;
  app: FastifyInstance;
  close(): Promise<void>;
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const heartbeatSeconds = options.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS;
  const hostTimeoutSeconds = options.hostTimeoutSeconds ?? DEFAULT_HOST_TIMEOUT_SECONDS;
  const { store, blobs, log } = options;

  await store.open();
  const snapshot = await store.load();
  const committer = new GroupCommitter(store);
  const core = new Core(committer, { heartbeatSeconds, hostTimeoutSeconds });
  core.recover(snapshot);
  log.info(
    { jobs: snapshot.jobs.length, tasks: snapshot.tasks.length, hosts: snapshot.hosts.length },
    "recovered from the store",
  );

  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics });
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
      for (const job of core.listJobs()) this.inc({ state: job.record.state });
    },
  });
  new Gauge({
    name: "steward_hosts",
    help: "Hosts by state",
    labelNames: ["state"],
    registers: [metrics],
    collect() {
      this.reset();
      for (const host of core.listHosts()) this.inc({ state: host.state });
    },
  });
  new Gauge({
    name: "steward_store_commits",
    help: "Group commits made since start",
    registers: [metrics],
    collect() {
      this.set(committer.commits);
    },
  });

  const app: FastifyInstance = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 64 * 1024 * 1024,
  });
  await app.register(multipart, {
    limits: { fileSize: Number.POSITIVE_INFINITY, files: 100_000, fieldSize: 16 * 1024 * 1024 },
  });
  app.addContentTypeParser("application/octet-stream", (_request, payload, done) => done(null, payload));

  app.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?")[0];
    if (!path.startsWith("/api/v1/") || path === "/api/v1/openapi.json") return;
    const token = bearerToken(request.headers.authorization);
    const expected = path.startsWith("/api/v1/agent/") ? options.joinToken : options.adminToken;
    if (!token || !safeEqual(token, expected)) {
      reply.code(401).send({ error: { code: "unauthorized", message: "missing or wrong bearer token" } });
    }
  });
  app.addHook("onResponse", async (request, reply) => {
    if (request.method === "POST" && request.url === "/api/v1/jobs" && reply.statusCode === 201)
      submitted.inc();
  });

  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error instanceof JobFileError || error instanceof InvalidRequestError) {
      return reply.code(400).send({ error: { code: "invalid", field: error.field, message: error.message } });
    }
    if (error instanceof NotFoundError)
      return reply.code(404).send({ error: { code: "not_found", message: error.message } });
    if (error instanceof ConflictError)
      return reply.code(409).send({ error: { code: "conflict", message: error.message } });
    if (error.statusCode && error.statusCode < 500) {
      return reply
        .code(error.statusCode)
        .send({ error: { code: error.code ?? "bad_request", message: error.message } });
    }
    log.error({ err: error }, "request failed");
    return reply.code(500).send({ error: { code: "internal", message: error.message } });
  });

  const gateway = new AgentGateway({ core, blobs, joinToken: options.joinToken, heartbeatSeconds, log });
  registerJobRoutes(app, { core, store, blobs });
  registerHostRoutes(app, core);
  registerAgentFileRoutes(app, core, blobs);
  registerSystemRoutes(app, core, metrics, () => "leader");

  app.server.on("upgrade", (request, socket, head) => {
    if (!gateway.handleUpgrade(request, socket, head)) socket.destroy();
  });

  await app.listen({ host: options.host ?? "127.0.0.1", port: options.port ?? DEFAULT_PORT });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : (options.port ?? DEFAULT_PORT);
  core.start();
  const url = `http://${options.host && options.host !== "0.0.0.0" ? options.host : "127.0.0.1"}:${port}`;
  log.info({ url }, "steward server listening");

  return {
    url,
    port,
    core,
    app,
    async close() {
      core.stop();
      gateway.close();
      await app.close();
      await committer.flush();
      await store.close();
    },
  };
}
