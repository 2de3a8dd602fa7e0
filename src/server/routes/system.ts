// Health, metrics, server-sent events, OpenAPI.

import type { FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import type { EventRecord } from "../../model/records.ts";
import type { Core } from "../core.ts";
import { openApiDocument } from "../openapi.ts";
import { eventView } from "../views.ts";

export function registerSystemRoutes(
  app: FastifyInstance,
  core: Core,
  metrics: Registry,
  role: () => "leader" | "standby",
): void {
  app.get("/healthz", async () => ({ ok: true, role: role() }));

  app.get("/metrics", async (_request, reply) => {
    reply.header("content-type", metrics.contentType);
    return metrics.metrics();
  });

  app.get("/api/v1/openapi.json", async () => openApiDocument());

  app.get("/api/v1/events", (request, reply) => {
    const { job } = request.query as { job?: string };
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    raw.write(": steward events\n\n");
    const listener = (event: EventRecord) => {
      if (job && event.jobId !== job) return;
      raw.write(`event: job\ndata: ${JSON.stringify({ jobId: event.jobId, ...eventView(event) })}\n\n`);
    };
    const keepAlive = setInterval(() => raw.write(": keep-alive\n\n"), 15_000);
    core.events.on("event", listener);
    request.raw.on("close", () => {
      clearInterval(keepAlive);
      core.events.off("event", listener);
    });
  });
}
