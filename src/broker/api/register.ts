// The HTTP API under /api/v1 (plus /healthz and /metrics): zod schemas through fastify's type
// provider, the bearer tokens, the error shape, the OpenAPI document, and the routes.
// src/broker/server/server.ts builds the fastify instance and calls registerApi.

import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";
import {
  hasZodFastifySchemaValidationErrors,
  isResponseSerializationError,
  serializerCompiler,
  validatorCompiler,
} from "fastify-type-provider-zod";
import type { Registry } from "prom-client";
import type { ErrorAnswer } from "../../common/api/errors.ts";
import type { Health } from "../../common/api/health.ts";
import { JobFileError } from "../../common/model/jobfile-error.ts";
import type { Principal, TokenKind } from "../../common/model/records.ts";
import { CheckpointManifestError } from "../../common/protocol/messages.ts";
import {
  API_VERSION,
  API_VERSION_HEADER,
  clientRefusal,
  foreignApiPathVersion,
  foreignApiVersion,
  RELEASE_HEADER,
  stewardRelease,
} from "../../common/protocol/versions.ts";
import { monotonicMs, steadyNow } from "../../common/time/clocks.ts";
import type { PoolStatus } from "../pools/pool-manager.ts";
import {
  ConflictError,
  InvalidRequestError,
  isNotLeading,
  NotFoundError,
  QuotaError,
  STORE_RETRY_AFTER_SECONDS,
  StorageFullError,
  storeUnavailable,
} from "../reactor/errors.ts";
import { accessOf, roleAllows, seesAllJobs } from "./access.ts";
import { bearerToken, identifyAgent, identifyUser } from "./auth.ts";
import { contentRange } from "./byte-range.ts";
import { registerDashboard } from "./dashboard.ts";
import { placedForRequest, placedRefusal } from "./job-file-source.ts";
import { internalErrorAnswer } from "./last-resort.ts";
import { registerOpenApi } from "./openapi.ts";
import type { ApiPorts, JobFiles } from "./ports.ts";
import {
  DEFAULT_SUBMIT_BURST,
  DEFAULT_SUBMIT_RATE,
  type RateLimit,
  SubmitRateLimiter,
} from "./rate-limit.ts";
import { validationAnswer } from "./requests.ts";
import { registerAccountingRoutes } from "./routes/accounting.ts";
import { registerAdminRoutes, type StartBackup } from "./routes/admin.ts";
import { registerAgentFileRoutes } from "./routes/agent-files.ts";
import { registerHostRoutes } from "./routes/hosts.ts";
import { registerJobRoutes } from "./routes/jobs.ts";
import { registerManyJobRoutes } from "./routes/many-jobs.ts";
import { registerPoolRoutes } from "./routes/pools.ts";
import { registerSecretRoutes } from "./routes/secrets.ts";
import { registerShareRoutes } from "./routes/shares.ts";
import { registerSystemRoutes } from "./routes/system.ts";
import { registerTokenRoutes } from "./routes/tokens.ts";
import { registerWorkflowRoutes } from "./routes/workflows.ts";
import { RangeNotSatisfiableError } from "./stored-file.ts";
import { DEFAULT_MAX_UPLOAD_MB, jobFileTooLarge } from "./upload-limit.ts";

export interface ApiDeps {
  ports: ApiPorts;
  /** A job's files in the blob store. */
  files: JobFiles;
  metrics: Registry;
  adminToken: string;
  joinToken: string;
  /** The batch-backed pools' state (none without a pools file). */
  pools?: () => PoolStatus[];
  /** The largest file a request may bring, in bytes (`--max-upload-mb`). */
  maxUploadBytes?: number;
  /** Submits per user token (`--submit-rate`, `--submit-burst`). */
  submitLimit?: RateLimit;
  /** Whether the server can serve, and who leads, as /healthz tells it. */
  health: () => Health;
  /** Starts a backup (POST /api/v1/admin/backup); absent, the route answers 501. */
  backup?: StartBackup;
  /** /metrics answers without a token (`--metrics-open`); by default it takes one of any role. */
  metricsOpen?: boolean;
}

declare module "fastify" {
  interface FastifyRequest {
    /** Who sent the request (API routes); null on open and agents' routes. */
    principal: Principal | null;
    /**
     * The host whose credential an agents' route was called with; null for a join token, which
     * may only join (src/broker/api/routes/agent-files.ts answers it as it answers an absent attempt).
     */
    agentHost: string | null;
  }
}

export async function registerApi(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const { ports, files } = deps;
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  await registerOpenApi(app);
  app.decorateRequest("principal", null);
  app.decorateRequest("agentHost", null);

  // Every route is in the one table of route x role (access.ts), or it is not registered at all.
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) if (method !== "HEAD") accessOf(method, route.url);
  });

  // Every answer names the API version and the release; a client of another API version (its
  // header, or a path under another /api/vN) is refused with a message naming both.
  app.addHook("onRequest", async (request, reply) => {
    reply.header(API_VERSION_HEADER, String(API_VERSION)).header(RELEASE_HEADER, stewardRelease());
    const foreign =
      foreignApiVersion(request.headers[API_VERSION_HEADER]) ??
      foreignApiPathVersion(request.url.split("?")[0]);
    if (foreign === null) return;
    const release = request.headers[RELEASE_HEADER];
    const client = {
      version: foreign,
      release: typeof release === "string" ? release.slice(0, 64) : undefined,
    };
    return reply
      .code(400)
      .send(
        answer("api_version", clientRefusal(client, { version: API_VERSION, release: stewardRelease() })),
      );
  });

  app.addHook("onRequest", async (request, reply) => {
    const url = request.routeOptions.url;
    const path = request.url.split("?")[0];
    // No such route: the 404 handler answers, but under /api/v1 only to a caller with a token.
    const access =
      url === undefined ? null : accessOf(request.method === "HEAD" ? "GET" : request.method, url);
    const open = access === "open" || (access === "metrics" && deps.metricsOpen === true);
    if (open || (access === null && !path.startsWith("/api/v1/"))) return;
    const token = bearerToken(request.headers.authorization);
    if (token === null) return unauthorized(reply, "missing bearer token (Authorization: Bearer TOKEN)");
    const credentials = {
      adminToken: deps.adminToken,
      joinToken: deps.joinToken,
      // Asked only past the admin and join tokens: a standby has no registry (its ports are the
      // leader's), so its /metrics takes the admin token, and a stored token answers 503 there.
      tokens: {
        principal: (text: string, now: number) => ports.read.principalOf(text, now),
        match: (text: string, kind: TokenKind, now: number) => ports.read.matchToken(text, kind, now),
      },
      now: steadyNow(),
    };
    if (access === "agent" || (access === null && path.startsWith("/api/v1/agent/"))) {
      const agent = identifyAgent(token, credentials);
      if (agent === null) return unauthorized(reply, "wrong join token or host credential");
      if ("refused" in agent) return unauthorized(reply, agent.refused);
      request.agentHost = agent.host;
      return;
    }
    const principal = identifyUser(token, credentials);
    if (principal === null) return unauthorized(reply, "wrong bearer token");
    if ("refused" in principal) return unauthorized(reply, principal.refused);
    request.principal = principal;
    if (access === null) return;
    const allowed = roleAllows(access, principal.role);
    if (allowed !== true) return reply.code(403).send(answer("forbidden", allowed));
    // A user's own jobs only: another's answers as if it did not exist.
    if ((access === "job-read" || access === "job-write") && !seesAllJobs(principal.role)) {
      const { id } = request.params as { id?: string };
      const owner = id === undefined ? undefined : ports.read.jobOwner(id);
      if (owner !== undefined && owner !== principal.user)
        return reply.code(404).send(answer("not_found", `no job ${id}`));
    }
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(answer("not_found", `no route ${request.method} ${request.url.split("?")[0]}`));
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      return reply.code(400).send(validationAnswer(error.validationContext, error.validation));
    }
    if (error instanceof JobFileError) {
      // The line and column of the field, when the file came as text (job-file-source.ts).
      const placed = placedForRequest(request, error);
      const { line, column } = placed.place ?? {};
      return reply.code(400).send({
        error: { code: "invalid", field: placed.field, message: placed.message, line, column },
      });
    }
    if (error instanceof InvalidRequestError) {
      // A field of the job file sent as text is named with its place, as the file's own errors are.
      const { message, place } = placedRefusal(request, error.field, error.message);
      return reply.code(400).send({
        error: { code: "invalid", field: error.field, message, line: place?.line, column: place?.column },
      });
    }
    // The store's or the blobs' file system is full: nothing of the request was kept (the path says
    // where space must be freed); the same request succeeds once it is.
    if (error instanceof StorageFullError) return reply.code(507).send(answer("storage_full", error.message));
    // The store could not be reached, or did not answer in time: not acknowledged (its change may
    // or may not be made, as with any answer lost); the client tries again, the same request.
    const storeDown = storeUnavailable(error);
    if (storeDown !== null) {
      request.log.warn({ err: error, url: request.url }, `store unavailable: ${storeDown}`);
      return reply
        .code(503)
        .header("retry-after", String(STORE_RETRY_AFTER_SECONDS))
        .send(answer("store_unavailable", `store unavailable: ${storeDown}`));
    }
    // The lead was lost while the request was in hand: nothing of it was committed; try the leader.
    if (isNotLeading(error)) {
      return reply.code(503).header("retry-after", "1").send(answer("standby", error.message));
    }
    // The body limit of a submit (the job file) or of any request.
    if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      const submit = request.method === "POST" && request.url.split("?")[0] === "/api/v1/jobs";
      return reply
        .code(413)
        .send(
          answer(
            "too_large",
            submit ? jobFileTooLarge().message : `the request body is too large: ${error.message}`,
          ),
        );
    }
    if (error instanceof NotFoundError) return reply.code(404).send(answer("not_found", error.message));
    if (error instanceof RangeNotSatisfiableError)
      return reply
        .code(416)
        .header("content-range", contentRange(null, error.size))
        .send(answer("range_not_satisfiable", error.message));
    if (error instanceof ConflictError) return reply.code(409).send(answer("conflict", error.message));
    if (error instanceof QuotaError)
      return reply.code(429).send({ error: { code: "quota", field: error.field, message: error.message } });
    // (The library knows its error by a `method` field alone, so the code is checked too.)
    if (error.code === "FST_ERR_RESPONSE_SERIALIZATION" && isResponseSerializationError(error)) {
      // An answer that does not fit its own schema is a bug of the server, not of the request.
      request.log.error({ issues: error.cause.issues, url: error.url }, "answer does not fit its schema");
      return reply
        .code(500)
        .send(answer("internal", `the answer to ${error.method} ${error.url} does not fit its schema`));
    }
    if (error.statusCode && error.statusCode < 500) {
      return reply.code(error.statusCode).send(answer(error.code ?? "bad_request", error.message));
    }
    // A stored checkpoint manifest that its own check refuses: the store was written before the
    // check, or tampered with. The message names a path of the caller's own checkpoint, nothing of
    // the server's, and the agent's attempt reports it.
    if (error instanceof CheckpointManifestError) {
      request.log.error({ err: error }, "a stored checkpoint manifest is refused");
      return reply.code(500).send(answer("bad_checkpoint", error.message));
    }
    // The log has the details, under the request's id; the answer has only the id.
    request.log.error({ err: error }, "request failed");
    return reply.code(500).send(internalErrorAnswer(request.id));
  });

  const submitLimiter = new SubmitRateLimiter(
    deps.submitLimit ?? { ratePerSecond: DEFAULT_SUBMIT_RATE, burst: DEFAULT_SUBMIT_BURST },
  );
  const sweep = setInterval(() => submitLimiter.sweep(monotonicMs()), 60_000);
  sweep.unref();
  app.addHook("onClose", async () => clearInterval(sweep));
  const maxUploadBytes = deps.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_MB * 1024 * 1024;
  registerJobRoutes(app, { ports, files, submitLimiter, maxUploadBytes });
  registerWorkflowRoutes(app, { ports, files, submitLimiter, maxUploadBytes });
  registerHostRoutes(app, ports);
  registerManyJobRoutes(app, ports);
  registerPoolRoutes(app, deps.pools ?? (() => []));
  registerTokenRoutes(app, ports);
  registerSecretRoutes(app, ports);
  registerAgentFileRoutes(app, ports, files, maxUploadBytes);
  registerAdminRoutes(app, deps.backup);
  registerAccountingRoutes(app, ports.read);
  registerShareRoutes(app, ports);
  registerSystemRoutes(app, {
    ports,
    metrics: deps.metrics,
    health: deps.health,
    // The document's interface has no index signature, so it reads as a plain JSON object here.
    openApi: () => app.swagger() as unknown as Record<string, unknown>,
  });
  await registerDashboard(app);
}

function unauthorized(reply: FastifyReply, message: string): FastifyReply {
  return reply.code(401).send(answer("unauthorized", message));
}

function answer(code: string, message: string): ErrorAnswer {
  return { error: { code, message } };
}
