// A redirect must not carry the bearer token away: the CLI (and the agent's HTTP client) follows a
// 307/308 only to one of the servers it was given, and never from HTTPS to plain HTTP. Little
// HTTP(S) servers on loopback play the standby, the leader and the stranger, and record the
// Authorization header of every request they get.

import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Server } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { HttpClient } from "../../src/common/transport/http-client.ts";
import { cleanup, cli, tempDir } from "../helpers/steward.ts";

const run = promisify(execFile);
const TOKEN = "secret-token-that-must-stay-home";
const dir = tempDir("steward-redirects-");
const servers: Server[] = [];

afterAll(async () => {
  for (const server of servers) {
    server.close();
    (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
  }
  cleanup(dir);
});

interface Recorder {
  url: string;
  /** The Authorization header of each request, in order (undefined when there was none). */
  authorizations: (string | undefined)[];
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

async function listen(server: Server, scheme: "http" | "https", handler: Handler): Promise<Recorder> {
  const authorizations: (string | undefined)[] = [];
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    authorizations.push(request.headers.authorization);
    request.resume();
    request.on("end", () => handler(request, response));
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return { url: `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`, authorizations };
}

const serveHttp = (handler: Handler) => listen(createHttpServer(), "http", handler);

/** Answers every request as a Steward leader would a listing: 200, no jobs. */
const answerEmptyList: Handler = (_request, response) => {
  response.writeHead(200, { "content-type": "application/json" });
  response.end("[]");
};

/** Sends every request to `target` + its path, as a standby does to its leader. */
const redirectTo =
  (target: () => string, status = 307): Handler =>
  (request, response) => {
    response.writeHead(status, { location: target() + (request.url ?? "/"), connection: "close" });
    response.end();
  };

/** A self-signed certificate for 127.0.0.1, which the CLI is told to trust (STEWARD_CA). */
async function selfSigned(): Promise<{ cert: string; key: string; path: string }> {
  await run(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "self.key",
      "-out",
      "self.crt",
      "-days",
      "2",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ],
    { cwd: dir },
  );
  const path = join(dir, "self.crt");
  return { cert: readFileSync(path, "utf8"), key: readFileSync(join(dir, "self.key"), "utf8"), path };
}

describe("the CLI and a redirect", () => {
  it("refuses one to a server not in STEWARD_URL, naming it, and sends it nothing", async () => {
    const stranger = await serveHttp(answerEmptyList);
    const standby = await serveHttp(redirectTo(() => stranger.url));
    const result = await cli({ url: standby.url, token: TOKEN }, ["ps", "--json"]);
    expect(stranger.authorizations).toStrictEqual([]);
    expect(result.code, result.stdout).toBe(3);
    expect(result.stderr).toBe(
      `steward: refusing to follow a redirect to ${stranger.url}/api/v1/jobs: not one of the servers in STEWARD_URL\n`,
    );
    // The server it was given got the token: that one the user chose.
    expect(standby.authorizations[0]).toBe(`Bearer ${TOKEN}`);
  });

  it("refuses a 308 to another port of the same host", async () => {
    const stranger = await serveHttp(answerEmptyList);
    const standby = await serveHttp(redirectTo(() => stranger.url, 308));
    const result = await cli({ url: standby.url, token: TOKEN }, ["ps", "--json"]);
    expect(stranger.authorizations).toStrictEqual([]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`refusing to follow a redirect to ${stranger.url}/api/v1/jobs`);
  });

  it("refuses one from HTTPS to plain HTTP, even to a server in STEWARD_URL", async () => {
    const { cert, key, path } = await selfSigned();
    const plain = await serveHttp(answerEmptyList);
    const secure = await listen(
      createHttpsServer({ cert, key }),
      "https",
      redirectTo(() => plain.url),
    );
    const result = await cli({ url: `${secure.url},${plain.url}`, token: TOKEN }, ["ps", "--json"], {
      env: { STEWARD_CA: path },
    });
    expect(plain.authorizations).toStrictEqual([]);
    expect(result.code, result.stdout).toBe(3);
    expect(result.stderr).toBe(
      `steward: refusing to follow a redirect to ${plain.url}/api/v1/jobs: it leaves HTTPS for plain HTTP\n`,
    );
    expect(secure.authorizations[0]).toBe(`Bearer ${TOKEN}`);
  });

  it("follows a standby's 307 to its leader when both are in STEWARD_URL, token and all", async () => {
    const leader = await serveHttp(answerEmptyList);
    const standby = await serveHttp(redirectTo(() => leader.url));
    const result = await cli({ url: `${standby.url},${leader.url}`, token: TOKEN }, ["ps", "--json"]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toStrictEqual([]);
    expect(leader.authorizations).toStrictEqual([`Bearer ${TOKEN}`]);
  });
});

describe("the agent's client and a redirect", () => {
  // As src/agent/agent.ts makes it: the server it is connected to now, among its --server list.
  const agentClient = (list: string[], current: () => string) =>
    new HttpClient({
      baseUrl: current,
      redirectOrigins: list,
      serversName: "--server",
      token: () => TOKEN,
      retry: { budgetMs: 500 },
    });

  it("refuses one to a server not in --server, and sends it nothing", async () => {
    const stranger = await serveHttp(answerEmptyList);
    const standby = await serveHttp(redirectTo(() => stranger.url));
    const error = await agentClient([standby.url], () => standby.url)
      .request({ path: "/api/v1/agent/jobs/1/inputs/data" })
      .catch((e: unknown) => e);
    expect(stranger.authorizations).toStrictEqual([]);
    expect((error as Error).message).toBe(
      `refusing to follow a redirect to ${stranger.url}/api/v1/agent/jobs/1/inputs/data: not one of the servers in --server`,
    );
  });

  it("follows one to another server of its --server list", async () => {
    const leader = await serveHttp(answerEmptyList);
    const standby = await serveHttp(redirectTo(() => leader.url));
    const response = await agentClient([standby.url, leader.url], () => standby.url).request({
      path: "/api/v1/agent/jobs/1/inputs/data",
    });
    expect(response.status).toBe(200);
    expect(leader.authorizations).toStrictEqual([`Bearer ${TOKEN}`]);
  });
});
