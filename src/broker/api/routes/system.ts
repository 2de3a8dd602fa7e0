// Health, metrics, the OpenAPI document, and job events as server-sent events.

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import type { Registry } from "prom-client";
import { z } from "zod";
import { errors } from "../../../common/api/errors.ts";
import { type ProgressEvent, streamEventSchema } from "../../../common/api/events.ts";
import { type Health, healthSchema } from "../../../common/api/health.ts";
import { json } from "../../../common/api/json-answer.ts";
import type { EventRecord } from "../../../common/model/records.ts";
import { seesAllJobs } from "../access.ts";
import { EventStream } from "../event-stream.ts";
import type { ApiPorts } from "../ports.ts";
import { wholeNumber } from "../requests.ts";
import { jobSummaryView } from "../views.ts";

const KEEP_ALIVE_MS = 15_000;
/** A job's task counts go out at most this often on one event stream. */
const PROGRESS_MS = 200;
/** Event streams one token may hold open at once (each holds buffers and listeners). */
export const MAX_STREAMS_PER_TOKEN = 8;

export interface SystemRouteDeps {
  ports: ApiPorts;
  metrics: Registry;
  /** Whether the server can serve, and who leads, as /healthz tells it. */
  health: () => Health;
  /** The OpenAPI document, generated from the route schemas once every route is registered. */
  openApi: () => Record<string, unknown>;
}

export function registerSystemRoutes(app: FastifyInstance, deps: SystemRouteDeps): void {
  const { ports, metrics } = deps;
  const api = app.withTypeProvider<ZodTypeProvider>();
  /** Open event streams by token (its id; the start admin token has none). */
  const streamsOf = new Map<string, number>();

  api.get(
    "/healthz",
    {
      schema: {
        summary:
          "Health (no token needed): 200 while the server's store answers; 503 with ok false and the reason while it does not (no server can lead then)",
        security: [],
        response: {
          200: json(healthSchema, "up: the store answers; `role` says whether this server leads"),
          503: json(healthSchema, "not ready: the store does not answer (`reason` says why)"),
        },
      },
    },
    async (_request, reply) => {
      const health = deps.health();
      if (!health.ok) reply.code(503).header("retry-after", "1");
      return health;
    },
  );

  api.get(
    "/metrics",
    {
      schema: {
        summary:
          "Metrics in the Prometheus text format (a token of any role, reader included; none on a server started with --metrics-open)",
        response: {
          200: { description: "Prometheus metrics", content: { "text/plain": { schema: z.string() } } },
        },
      },
    },
    async (_request, reply) => {
      reply.header("content-type", metrics.contentType);
      return metrics.metrics();
    },
  );

  api.get(
    "/api/v1/openapi.json",
    {
      schema: {
        summary: "This document (no token needed)",
        security: [],
        response: { 200: json(z.record(z.string(), z.unknown()), "the OpenAPI 3.1 document") },
      },
    },
    async () => deps.openApi(),
  );

  api.get(
    "/api/v1/events",
    {
      schema: {
        summary:
          "Job events as server-sent events: `event: job`, `id: N`, `data: JobEvent`. With Last-Event-ID (or after=N) the stored events after N come first, then the live ones. Also `event: progress` (no id, not stored): a job's task counts when its tasks change state, at most every 200 ms per job. A client that stops reading is cut once 8 MiB wait for it (it comes back with Last-Event-ID); a token holds at most 8 streams at once (429)",
        querystring: z.object({
          job: z.string().min(1).optional().meta({ description: "only this job's events" }),
          after: wholeNumber()
            .optional()
            .meta({ description: "first send the stored events with a larger id (Last-Event-ID wins)" }),
        }),
        headers: z.looseObject({
          "last-event-id": z
            .string()
            .regex(/^\d+$/, "not an event id")
            .optional()
            .meta({ description: "the id of the last event the client has: it gets every later one" }),
        }),
        response: {
          200: {
            description: "an event stream; each event's data is a JobEvent",
            content: { "text/event-stream": { schema: streamEventSchema } },
          },
          ...errors(400, 401, 429),
        },
      },
    },
    (request, reply) => {
      const { job } = request.query;
      const header = request.headers["last-event-id"];
      const after = header !== undefined ? Number(header) : (request.query.after ?? null);
      const principal = request.principal;
      const streamKey = principal ? (principal.tokenId ?? `start:${principal.user}`) : "";
      const holding = streamsOf.get(streamKey) ?? 0;
      if (holding >= MAX_STREAMS_PER_TOKEN) {
        reply.code(429).send({
          error: {
            code: "too_many_streams",
            message: `at most ${MAX_STREAMS_PER_TOKEN} event streams at once per token; close one first`,
          },
        });
        return;
      }
      streamsOf.set(streamKey, holding + 1);
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        connection: "keep-alive",
      });
      raw.write(": steward events\n\n");
      // A user sees the events of their own jobs only.
      const visible =
        principal && !seesAllJobs(principal.role)
          ? (event: EventRecord) => ports.read.jobOwner(event.jobId) === principal.user
          : undefined;
      const stream = new EventStream(raw, job ?? null, undefined, visible, undefined, (queued) =>
        app.log.info({ user: principal?.user, queued }, "event stream cut: its client stopped reading"),
      );
      const listener = (event: EventRecord) => stream.live(event);
      // Task counts as they change (not stored, no id): at most one line per job every PROGRESS_MS.
      const pendingProgress = new Map<string, NodeJS.Timeout>();
      const progress = (jobId: string) => {
        if (pendingProgress.has(jobId) || (job !== undefined && jobId !== job)) return;
        pendingProgress.set(
          jobId,
          setTimeout(() => {
            pendingProgress.delete(jobId);
            const entry = ports.read.header(jobId);
            if (!entry) return;
            if (principal && !seesAllJobs(principal.role) && entry.owner !== principal.user) return;
            const summary = jobSummaryView(entry);
            const data: ProgressEvent = {
              jobId,
              state: summary.state,
              taskCount: summary.taskCount,
              counts: summary.counts,
            };
            stream.send(`event: progress\ndata: ${JSON.stringify(data)}\n\n`);
          }, PROGRESS_MS),
        );
      };
      const keepAlive = setInterval(() => stream.send(": keep-alive\n\n"), KEEP_ALIVE_MS);
      // Live events are listened to before the backlog is read, so none committed meanwhile is lost.
      const stopWatching = ports.read.watchEvents(listener, progress);
      request.raw.on("close", () => {
        const left = (streamsOf.get(streamKey) ?? 1) - 1;
        if (left > 0) streamsOf.set(streamKey, left);
        else streamsOf.delete(streamKey);
        clearInterval(keepAlive);
        stopWatching();
        for (const timer of pendingProgress.values()) clearTimeout(timer);
        stream.close();
      });
      if (after === null) {
        stream.liveOnly();
        return;
      }
      stream.catchUp(ports.read, after).catch((error: unknown) => {
        app.log.warn({ err: error }, "reading stored events failed");
        raw.end();
      });
    },
  );
}
