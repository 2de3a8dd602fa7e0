// docs/openapi.json: the document the server serves at /api/v1/openapi.json, from the same routes
// registered on a Fastify app that never listens (registering calls nothing on the server's parts).

import Fastify from "fastify";
import { Registry } from "prom-client";
import type { ApiPorts, JobFiles } from "../../src/broker/api/ports.ts";
import { registerApi } from "../../src/broker/api/register.ts";

export async function openApiDoc(): Promise<string> {
  const app = Fastify();
  try {
    await registerApi(app, {
      ports: {} as ApiPorts,
      files: {} as JobFiles,
      metrics: new Registry(),
      adminToken: "unused",
      joinToken: "unused",
      health: () => ({ ok: true, role: "leader", leader: null, term: 1 }),
    });
    const response = await app.inject({ method: "GET", url: "/api/v1/openapi.json" });
    if (response.statusCode !== 200) throw new Error(`GET /api/v1/openapi.json: ${response.statusCode}`);
    return `${JSON.stringify(response.json(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}
