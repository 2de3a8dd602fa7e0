// The local admin token (./.steward/admin-token, which `steward up` leaves) is what the CLI and the
// Python client send when STEWARD_TOKEN is unset: only to a server on this machine's loopback
// (127.0.0.0/8, ::1, localhost), never to a remote STEWARD_URL or a list with one. The stand-in
// server listens on every address and records the Authorization header of each request.

import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isLoopbackUrl } from "../../src/cli/loopback-url.ts";
import { cleanup, cli, tempDir } from "../helpers/steward.ts";
import { pythonEnv } from "../python/python.ts";

const LOCAL_TOKEN = "local-admin-token-of-this-machine";

describe("isLoopbackUrl", () => {
  it.each([
    ["http://127.0.0.1:4780", true],
    ["http://127.5.6.7", true],
    ["http://127.1:4780", true],
    ["http://localhost:4780", true],
    ["https://LOCALHOST/", true],
    ["http://[::1]:4780", true],
    ["http://128.0.0.1", false],
    ["http://192.0.2.2:4780", false],
    ["http://localhost.example.org", false],
    ["http://127.0.0.1.example.org", false],
    ["http://[::2]:4780", false],
    ["not a url", false],
  ])("%s: %s", (url, loopback) => {
    expect(isLoopbackUrl(url)).toBe(loopback);
  });
});

const dir = tempDir("steward-local-token-");
const seen: (string | undefined)[] = [];
let server: Server;
let port: number;
/** An address of this machine that is not on the loopback: a "remote" server, as far as the client can tell. */
const remote = Object.values(networkInterfaces())
  .flat()
  .find((address) => address && !address.internal && address.family === "IPv4")?.address;

beforeAll(async () => {
  mkdirSync(join(dir, ".steward"));
  writeFileSync(join(dir, ".steward", "admin-token"), `${LOCAL_TOKEN}\n`, { mode: 0o600 });
  server = createServer((request, response) => {
    seen.push(request.headers.authorization);
    response.writeHead(401, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: { code: "unauthorized", message: "no" } }));
  });
  await new Promise<void>((done) => server.listen(0, "0.0.0.0", done));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => {
  server.close();
  server.closeAllConnections();
  cleanup(dir);
});

/** The Authorization headers a `steward jobs` against `url` sent (STEWARD_TOKEN unset, in the folder with .steward). */
async function cliSends(url: string, token?: string): Promise<(string | undefined)[]> {
  seen.length = 0;
  const env: Record<string, string> = { STEWARD_URL: url };
  const saved = process.env.STEWARD_TOKEN;
  delete process.env.STEWARD_TOKEN;
  try {
    await cli(null, ["ps"], { cwd: dir, env: token ? { ...env, STEWARD_TOKEN: token } : env });
  } finally {
    if (saved !== undefined) process.env.STEWARD_TOKEN = saved;
  }
  return [...seen];
}

/** The same through the Python client's Client.from_env(). */
async function pythonSends(url: string): Promise<(string | undefined)[]> {
  seen.length = 0;
  const env = pythonEnv({ STEWARD_URL: url });
  delete env.STEWARD_TOKEN;
  await new Promise<void>((done) =>
    execFile(
      "python3",
      [
        "-c",
        'import steward\ntry:\n  steward.Client.from_env(retry_seconds=0).job("1")\nexcept Exception:\n  pass\n',
      ],
      { cwd: dir, env, timeout: 30_000 },
      () => done(),
    ),
  );
  return [...seen];
}

describe.each([
  ["the CLI", cliSends],
  ["the Python client", pythonSends],
])("%s", (_name, sends) => {
  it("sends the local admin token to a loopback server (127.0.0.1, localhost)", async () => {
    for (const url of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      const headers = await sends(url);
      expect(headers.length, url).toBeGreaterThan(0);
      expect(headers).toContain(`Bearer ${LOCAL_TOKEN}`);
    }
  });

  it.skipIf(remote === undefined)("does not send it to a server elsewhere, alone or in a list", async () => {
    for (const url of [`http://${remote}:${port}`, `http://127.0.0.1:${port},http://${remote}:${port}`]) {
      const headers = await sends(url);
      expect(headers.length, url).toBeGreaterThan(0);
      expect(headers.join(" "), url).not.toContain(LOCAL_TOKEN);
    }
  });
});

it.skipIf(remote === undefined)("the CLI sends STEWARD_TOKEN, when set, to any server", async () => {
  const headers = await cliSends(`http://${remote}:${port}`, "given-token");
  expect(headers).toContain("Bearer given-token");
});
