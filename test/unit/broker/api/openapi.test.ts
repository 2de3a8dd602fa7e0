// The OpenAPI document is generated from the route schemas: every route the API registers is in
// it (but the dashboard's files, hidden), and every operation describes its answer.

import Fastify from "fastify";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import type { ApiPorts, JobFiles } from "../../../../src/broker/api/ports.ts";
import { registerApi } from "../../../../src/broker/api/register.ts";

interface Operation {
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

async function apiWithRoutes() {
  const app = Fastify();
  const routes: { method: string; url: string }[] = [];
  app.addHook("onRoute", (route) => {
    // The dashboard's files are hidden from the document: pages, not API.
    if ((route.schema as { hide?: boolean } | undefined)?.hide) return;
    for (const method of [route.method].flat()) routes.push({ method, url: route.url });
  });
  // Registering routes calls nothing on these: the document is all this test asks for.
  await registerApi(app, {
    ports: {} as ApiPorts,
    files: {} as JobFiles,
    metrics: new Registry(),
    adminToken: "admin",
    joinToken: "join",
    health: () => ({ ok: true, role: "leader", leader: null, term: 1 }),
  });
  await app.ready();
  return { app, routes };
}

/** fastify's `/jobs/:id/outputs/:task/*` is OpenAPI's `/jobs/{id}/outputs/{task}/{*}`. */
const openApiPath = (url: string) => url.replace(/:(\w+)/g, "{$1}").replace(/\*$/, "{*}");

describe("the OpenAPI document", () => {
  it("lists every route the API registers, each with a 2xx response schema", async () => {
    const { app, routes } = await apiWithRoutes();
    const response = await app.inject({ method: "GET", url: "/api/v1/openapi.json" });
    expect(response.statusCode).toBe(200);
    const document = response.json() as { openapi: string; paths: Record<string, Record<string, Operation>> };
    expect(document.openapi).toBe("3.1.0");

    const registered = routes
      .filter((route) => route.method !== "HEAD")
      .map((route) => `${route.method.toLowerCase()} ${openApiPath(route.url)}`)
      .sort();
    const documented = Object.entries(document.paths)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`))
      .sort();
    expect(documented).toEqual(registered);
    expect(registered.length).toBeGreaterThan(20);

    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const success = Object.entries(operation.responses ?? {}).filter(([code]) => /^2\d\d$/.test(code));
        expect(success.length, `${method} ${path}`).toBeGreaterThan(0);
        for (const [, answer] of success) {
          const schemas = Object.values(answer.content ?? {}).map((media) => media.schema);
          expect(schemas.length, `${method} ${path}`).toBeGreaterThan(0);
          for (const schema of schemas) expect(schema, `${method} ${path}`).toBeTruthy();
        }
      }
    }
    await app.close();
  });
});
