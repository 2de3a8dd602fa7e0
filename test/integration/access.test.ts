// The route x role table, walked against a real server: every operation of the OpenAPI document is
// called with no token, a wrong token, a well-formed unknown token, each role and a join token, and
// each answer's status is checked. The expectations are written here, apart from the server's own
// table (src/broker/api/access.ts): a route added without an entry below fails this test.

import { afterAll, beforeAll, expect, it } from "vitest";
import { api, cleanup, cli, type StewardProcess, startServerProcess } from "../helpers/steward.ts";

/**
 * What each operation lets through:
 * open: anyone; agent: join tokens and host credentials only; any: every role; writer: admin and
 * user; job: every role, a user only on their own job (404 on another's); job-writer: admin, and a
 * user on their own job; admin: admins only.
 */
type Rule = "open" | "agent" | "any" | "writer" | "job" | "job-writer" | "admin";

const EXPECTED: Record<string, Rule> = {
  "POST /api/v1/jobs": "writer",
  "GET /api/v1/jobs": "any",
  "GET /api/v1/jobs/states": "any",
  "POST /api/v1/jobs/cancel": "writer",
  "GET /api/v1/jobs/{id}": "job",
  "DELETE /api/v1/jobs/{id}": "job-writer",
  "PATCH /api/v1/jobs/{id}": "job-writer",
  "POST /api/v1/jobs/{id}/cancel": "job-writer",
  "POST /api/v1/jobs/{id}/retry": "job-writer",
  "POST /api/v1/jobs/{id}/hold": "job-writer",
  "POST /api/v1/jobs/{id}/release": "job-writer",
  "POST /api/v1/jobs/{id}/migrate": "job-writer",
  "GET /api/v1/jobs/{id}/logs": "job",
  "GET /api/v1/jobs/{id}/outputs": "job",
  "GET /api/v1/jobs/{id}/outputs/{task}/{*}": "job",
  "GET /api/v1/jobs/{id}/explain": "job",
  "GET /api/v1/jobs/{id}/task-states": "job",
  "GET /api/v1/jobs/{id}/tasks/{task}": "job",
  "POST /api/v1/workflows": "writer",
  "GET /api/v1/workflows": "any",
  "GET /api/v1/workflows/{id}": "job",
  "POST /api/v1/workflows/{id}/retry": "job-writer",
  "POST /api/v1/workflows/{id}/cancel": "job-writer",
  "POST /api/v1/workflows/{id}/hold": "job-writer",
  "POST /api/v1/workflows/{id}/release": "job-writer",
  "DELETE /api/v1/workflows/{id}": "job-writer",
  "GET /api/v1/hosts": "any",
  "POST /api/v1/hosts/{name}/drain": "admin",
  "POST /api/v1/hosts/{name}/undrain": "admin",
  "DELETE /api/v1/hosts/{name}": "admin",
  "GET /api/v1/pools": "any",
  "GET /api/v1/accounting": "any",
  "GET /api/v1/shares": "any",
  "GET /api/v1/whoami": "any",
  "PUT /api/v1/secrets/{name}": "writer",
  "GET /api/v1/secrets": "writer",
  "DELETE /api/v1/secrets/{name}": "writer",
  "POST /api/v1/tokens": "admin",
  "GET /api/v1/tokens": "admin",
  "DELETE /api/v1/tokens/{id}": "admin",
  "POST /api/v1/join-tokens": "admin",
  "GET /api/v1/join-tokens": "admin",
  "DELETE /api/v1/join-tokens/{id}": "admin",
  "POST /api/v1/admin/backup": "admin",
  "GET /api/v1/agent/jobs/{id}/inputs/{*}": "agent",
  "PUT /api/v1/agent/jobs/{id}/tasks/{task}/attempts/{attempt}/outputs/{*}": "agent",
  "GET /api/v1/agent/jobs/{id}/tasks/{task}/checkpoint": "agent",
  "GET /api/v1/agent/jobs/{id}/tasks/{task}/checkpoint/objects/{sha}": "agent",
  "PUT /api/v1/agent/jobs/{id}/tasks/{task}/attempts/{attempt}/checkpoint/objects/{sha}": "agent",
  "POST /api/v1/agent/jobs/{id}/tasks/{task}/attempts/{attempt}/checkpoint": "agent",
  "GET /healthz": "open",
  "GET /metrics": "any",
  "GET /api/v1/openapi.json": "open",
  "GET /api/v1/events": "any",
};

type Caller = "none" | "garbage" | "unknown" | "admin" | "user" | "reader" | "join";
/** What a caller gets: a status, or "through" (neither 401 nor 403: the route's own answer). */
type Want = number | "through";

function want(rule: Rule, caller: Caller, ownJob: boolean): Want {
  if (rule === "open") return "through";
  if (caller === "none" || caller === "garbage" || caller === "unknown") return 401;
  if (rule === "agent") return caller === "join" ? "through" : 401;
  if (caller === "join") return 401;
  switch (rule) {
    case "any":
      return "through";
    case "writer":
      return caller === "reader" ? 403 : "through";
    case "job":
      return caller === "user" && !ownJob ? 404 : "through";
    case "job-writer":
      if (caller === "reader") return 403;
      return caller === "user" && !ownJob ? 404 : "through";
    case "admin":
      return caller === "admin" ? "through" : 403;
  }
}

let server: StewardProcess & { joinToken: string };
const tokens: Partial<Record<Caller, string>> = {};
let adminJob: string;
let userJob: string;
/** A workflow of each, for the workflows' routes (in place of the job of the same owner). */
const workflowOf = new Map<string, string>();

beforeAll(async () => {
  server = await startServerProcess();
  for (const [caller, role] of [
    ["user", "user"],
    ["reader", "reader"],
  ] as const) {
    const made = await cli(server, ["token", "create", "--user", `walker-${role}`, "--role", role]);
    expect(made.code, made.stderr).toBe(0);
    tokens[caller] = made.stdout.trim();
  }
  tokens.admin = server.token;
  tokens.join = server.joinToken;
  tokens.garbage = "not-a-token";
  tokens.unknown = `sta_0123456789_${"0".repeat(48)}`;
  // Jobs wait (no agent): one of the admin's, one of the user's.
  adminJob = (
    (await api(server, "POST", "/api/v1/jobs", { name: "a", command: "sleep 600" })) as { id: string }
  ).id;
  userJob = (
    (await api({ url: server.url, token: tokens.user ?? "" }, "POST", "/api/v1/jobs", {
      name: "u",
      command: "sleep 600",
    })) as { id: string }
  ).id;
  for (const [jobId, token] of [
    [adminJob, server.token],
    [userJob, tokens.user ?? ""],
  ] as const) {
    const made = (await api({ url: server.url, token }, "POST", "/api/v1/workflows", {
      jobs: { w: { command: "sleep 600" } },
    })) as { workflow: string };
    workflowOf.set(jobId, made.workflow);
  }
}, 60_000);

afterAll(async () => {
  await server?.stop();
  cleanup(server?.data ?? "");
});

function fill(path: string, jobId: string): string {
  return path
    .replace("{id}", path.startsWith("/api/v1/workflows/") ? (workflowOf.get(jobId) ?? "") : jobId)
    .replace("{task}", "0")
    .replace("{attempt}", "1")
    .replace("{sha}", "0".repeat(64))
    .replace("{name}", "nohost")
    .replace("{*}", "file.txt");
}

async function call(method: string, path: string, token: string | undefined): Promise<number> {
  const abort = new AbortController();
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (method === "POST" || method === "PUT" || method === "PATCH") {
    headers["content-type"] =
      path.includes("/agent/") && method === "PUT" ? "application/octet-stream" : "application/json";
    body = headers["content-type"] === "application/json" ? "{}" : "x";
  }
  const response = await fetch(server.url + path, { method, headers, body, signal: abort.signal });
  // The event stream never ends: its status is enough.
  abort.abort();
  return response.status;
}

it("every route of the OpenAPI document has an expectation here, and every expectation a route", async () => {
  const document = (await (await fetch(`${server.url}/api/v1/openapi.json`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
  );
  expect(
    operations.filter((operation) => !(operation in EXPECTED)),
    "routes with no entry",
  ).toEqual([]);
  expect(
    Object.keys(EXPECTED).filter((key) => !operations.includes(key)),
    "entries with no route",
  ).toEqual([]);
});

it("each route answers each caller as the table says", async () => {
  const wrong: string[] = [];
  const callers: Caller[] = ["none", "garbage", "unknown", "join", "reader", "user", "admin"];
  // Changes last: cancel, hold, remove and the like come after the reads of the same job.
  const keys = Object.keys(EXPECTED)
    .sort((a, b) => Number(a.startsWith("GET")) - Number(b.startsWith("GET")))
    .reverse();
  let checked = 0;
  for (const key of keys) {
    const [method, path] = key.split(" ");
    const rule = EXPECTED[key];
    for (const caller of callers) {
      const jobs =
        path.includes("{id}") && !path.includes("tokens") && !path.includes("/agent/")
          ? [adminJob, userJob]
          : [adminJob];
      for (const jobId of jobs) {
        const ownJob = jobId === userJob;
        const expected = want(rule, caller, ownJob);
        const status = await call(method, fill(path, jobId), caller === "none" ? undefined : tokens[caller]);
        checked++;
        const ok = expected === "through" ? status !== 401 && status !== 403 : status === expected;
        if (!ok)
          wrong.push(
            `${key} as ${caller}${jobs.length > 1 ? (ownJob ? " (own job)" : " (another's job)") : ""}: ${status}, wanted ${expected}`,
          );
      }
    }
  }
  expect(wrong).toEqual([]);
  expect(checked).toBeGreaterThan(Object.keys(EXPECTED).length * callers.length);
});
