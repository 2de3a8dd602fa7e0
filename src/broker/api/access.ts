// Who may call which route: the one table of route x role, and the check every request passes
// through (register.ts calls it from one onRequest hook). A route without an entry here cannot be
// registered (registerApi throws), and test/integration/access.test.ts walks every route of the
// OpenAPI document with no token, a wrong token and each role.

import type { Role } from "../../common/model/records.ts";

/**
 * What a route needs:
 * - `open`: nothing (health, the OpenAPI document, the dashboard's files);
 * - `metrics`: any API token (admin, user or reader), or nothing on a server started with
 *   `--metrics-open` (a scraper that cannot send one): the figures tell how busy the grid is;
 * - `agent`: a join token or a host credential (the agents' file routes); the route then serves
 *   only the attempts placed on the credential's host, and a join token nothing (agent-files.ts);
 * - `read`: any API token (a user's lists show only their own jobs);
 * - `submit`: admin or user;
 * - `job-read`: any API token; a user only for their own job (another's answers 404, as if absent);
 * - `job-write`: admin, or a user for their own job (404 for another's); a reader gets 403;
 * - `admin`: the admin role only.
 */
export type Access = "open" | "metrics" | "agent" | "read" | "submit" | "job-read" | "job-write" | "admin";

/** Every route, as `METHOD /url` with fastify's `:param` form, and what it needs. */
export const ROUTE_ACCESS: Readonly<Record<string, Access>> = {
  "GET /healthz": "open",
  "GET /metrics": "metrics",
  "GET /api/v1/openapi.json": "open",
  // The dashboard's static files (its data comes through the API, with the user's token).
  "GET /": "open",
  "GET /ui/*": "open",
  "GET /ui/vendor/:file": "open",
  "GET /api/v1/whoami": "read",
  "GET /api/v1/events": "read",
  "POST /api/v1/jobs": "submit",
  "GET /api/v1/jobs": "read",
  // Many jobs named at once: the route answers another user's as absent (and cancels none of them).
  "GET /api/v1/jobs/states": "read",
  "POST /api/v1/jobs/cancel": "submit",
  "GET /api/v1/jobs/:id": "job-read",
  "DELETE /api/v1/jobs/:id": "job-write",
  "PATCH /api/v1/jobs/:id": "job-write",
  "POST /api/v1/jobs/:id/cancel": "job-write",
  "POST /api/v1/jobs/:id/retry": "job-write",
  "POST /api/v1/jobs/:id/hold": "job-write",
  "POST /api/v1/jobs/:id/release": "job-write",
  "POST /api/v1/jobs/:id/migrate": "job-write",
  "GET /api/v1/jobs/:id/logs": "job-read",
  "GET /api/v1/jobs/:id/outputs": "job-read",
  "GET /api/v1/jobs/:id/outputs/:task/*": "job-read",
  "GET /api/v1/jobs/:id/explain": "job-read",
  "GET /api/v1/jobs/:id/task-states": "job-read",
  "GET /api/v1/jobs/:id/tasks/:task": "job-read",
  // A user's own workflows only (the routes answer another's as absent).
  "POST /api/v1/workflows": "submit",
  "GET /api/v1/workflows": "read",
  "GET /api/v1/workflows/:id": "job-read",
  "POST /api/v1/workflows/:id/retry": "job-write",
  "POST /api/v1/workflows/:id/cancel": "job-write",
  "POST /api/v1/workflows/:id/hold": "job-write",
  "POST /api/v1/workflows/:id/release": "job-write",
  "DELETE /api/v1/workflows/:id": "job-write",
  "GET /api/v1/hosts": "read",
  "POST /api/v1/hosts/:name/drain": "admin",
  "POST /api/v1/hosts/:name/undrain": "admin",
  "DELETE /api/v1/hosts/:name": "admin",
  "GET /api/v1/pools": "read",
  // A user sees their own attempts only (the route narrows to them); admins and readers all.
  "GET /api/v1/accounting": "read",
  "GET /api/v1/shares": "read",
  // A user's own secrets (an admin's, or another user's through x-steward-user); a reader has none.
  "PUT /api/v1/secrets/:name": "submit",
  "GET /api/v1/secrets": "submit",
  "DELETE /api/v1/secrets/:name": "submit",
  "POST /api/v1/tokens": "admin",
  "GET /api/v1/tokens": "admin",
  "DELETE /api/v1/tokens/:id": "admin",
  "POST /api/v1/join-tokens": "admin",
  "GET /api/v1/join-tokens": "admin",
  "DELETE /api/v1/join-tokens/:id": "admin",
  "POST /api/v1/admin/backup": "admin",
  "GET /api/v1/agent/jobs/:id/inputs/*": "agent",
  "PUT /api/v1/agent/jobs/:id/tasks/:task/attempts/:attempt/outputs/*": "agent",
  "GET /api/v1/agent/jobs/:id/tasks/:task/checkpoint": "agent",
  "GET /api/v1/agent/jobs/:id/tasks/:task/checkpoint/objects/:sha": "agent",
  "PUT /api/v1/agent/jobs/:id/tasks/:task/attempts/:attempt/checkpoint/objects/:sha": "agent",
  "POST /api/v1/agent/jobs/:id/tasks/:task/attempts/:attempt/checkpoint": "agent",
};

function routeKey(method: string, url: string): string {
  return `${method} ${url}`;
}

/** What a route needs; throws for a route missing from the table (a route must not go unchecked). */
export function accessOf(method: string, url: string): Access {
  const access = ROUTE_ACCESS[routeKey(method, url)];
  if (!access)
    throw new Error(`route ${method} ${url} has no entry in ROUTE_ACCESS (src/broker/api/access.ts)`);
  return access;
}

/** A role's verdict on a route, before ownership: allowed, or refused with 403's message. */
export function roleAllows(access: Access, role: Role): true | string {
  switch (access) {
    case "open":
    case "metrics":
    case "read":
    case "job-read":
      return true;
    case "agent":
      return "agents' routes take a join token or a host credential, not an API token";
    case "submit":
    case "job-write":
      return role === "reader" ? "a reader may read but not change anything" : true;
    case "admin":
      return role === "admin" ? true : `only an admin may do this (your role is ${role})`;
  }
}

/** Whether a role sees every job (admins and readers) or only its own (users). */
export function seesAllJobs(role: Role): boolean {
  return role !== "user";
}
