// The host routes' drain and undrain: each answers the host as it is after, and writes to the
// server's log who changed it, only when it changed the host's state (a drain of a draining host,
// an undrain of a ready one, logs nothing).

import Fastify from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { describe, expect, it } from "vitest";
import type { ApiPorts } from "../../../../../src/broker/api/ports.ts";
import { registerHostRoutes } from "../../../../../src/broker/api/routes/hosts.ts";
import type { HostListing } from "../../../../../src/common/model/records.ts";
import type { HostState } from "../../../../../src/common/model/states.ts";
import { facts } from "../../../../helpers/agent-messages.ts";

/** A server of one host `h1` in `state`: the routes' answers and what they logged (host, by, action: message). */
async function hostRoutes(state: HostState) {
  const logged: string[] = [];
  const app = Fastify({
    logger: {
      level: "info",
      stream: {
        write(line: string) {
          const entry = JSON.parse(line) as { host?: string; by?: string; action?: string; msg: string };
          if (entry.action) logged.push(`${entry.host} ${entry.by} ${entry.action}: ${entry.msg}`);
        },
      },
    },
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  const host: HostListing = {
    name: "h1",
    pool: "default",
    state,
    slots: 2,
    labels: {},
    facts: facts("h1"),
    lastSeen: 0,
    endsAt: null,
    slotsFree: 2,
    connected: true,
    liveAttempts: 0,
  };
  const ports = {
    read: {
      readHosts: async () => [host],
      hostOf: (name: string) => (name === host.name ? host : undefined),
    },
    hosts: {
      drain: async () => {
        if (host.state === "ready") host.state = "draining";
      },
      undrain: async () => {
        if (host.state === "draining") host.state = "ready";
      },
    },
  } as unknown as ApiPorts;
  registerHostRoutes(app, ports);
  await app.ready();
  const post = async (action: string) => {
    const answer = await app.inject({ method: "POST", url: `/api/v1/hosts/h1/${action}` });
    expect(answer.statusCode, answer.body).toBe(200);
    return (answer.json() as { state: string }).state;
  };
  return { post, logged };
}

describe("the host routes' drain and undrain", () => {
  it.each([
    ["drain", "ready", "draining", ["h1 admin drain: host h1 drained by admin"]],
    ["drain", "draining", "draining", []],
    ["undrain", "draining", "ready", ["h1 admin undrain: host h1 undrained by admin"]],
    ["undrain", "ready", "ready", []],
  ] as const)("%s of a %s host: %s, logged %j", async (action, before, after, logged) => {
    const routes = await hostRoutes(before);
    expect(await routes.post(action)).toBe(after);
    expect(routes.logged).toStrictEqual(logged);
  });
});
