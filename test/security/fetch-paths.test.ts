// `steward fetch` writes only under the folder it is given: a server (or anything on a plain-HTTP
// path to it) that names an output `../out-b/x`, which a check of the prefix `out` would let
// through, gets the fetch refused and nothing written beside the folder. The stand-in server
// answers as a Steward server would a job with one output.

import { existsSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cleanup, cli, tempDir } from "../helpers/steward.ts";

const dir = tempDir("steward-fetch-paths-");
const servers: Server[] = [];

afterAll(() => {
  for (const server of servers) {
    server.close();
    server.closeAllConnections();
  }
  cleanup(dir);
});

/** A stand-in server whose job 1 has one output file, named `path`. */
async function serverNaming(path: string): Promise<string> {
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://x");
    const json = (value: unknown) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(value));
    };
    if (url.pathname === "/api/v1/jobs/1") return json({ id: "1", taskCount: 1, state: "succeeded" });
    if (url.pathname === "/api/v1/jobs/1/outputs") return json([{ task: 0, path, bytes: 6 }]);
    if (url.pathname.startsWith("/api/v1/jobs/1/outputs/0/")) {
      response.writeHead(200, { "content-type": "application/octet-stream" });
      return response.end("owned\n");
    }
    response.writeHead(404, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: "not found" }));
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("steward fetch", () => {
  it.each([
    ["a sibling folder sharing the target's prefix", "../out-b/x"],
    ["the parent folder", "../x"],
    ["an absolute path", "/tmp/steward-fetch-owned"],
  ])("refuses an output path that leaves its folder: %s", async (_what, path) => {
    const url = await serverNaming(path);
    const to = join(dir, "out");
    const result = await cli({ url, token: "t" }, ["fetch", "1", "--to", to]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`refusing to write outside ${to}`);
    expect(existsSync(join(dir, "out-b", "x"))).toBe(false);
    expect(existsSync(join(dir, "x"))).toBe(false);
  });

  it("writes a path that stays in its folder", async () => {
    const url = await serverNaming("sub/result.txt");
    const to = join(dir, "fine");
    const result = await cli({ url, token: "t" }, ["fetch", "1", "--to", to]);
    expect(result.stderr).toContain("1 file, 6 bytes written under");
    expect(result.code).toBe(0);
    expect(existsSync(join(to, "sub", "result.txt"))).toBe(true);
  });
});
