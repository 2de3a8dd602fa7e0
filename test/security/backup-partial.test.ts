// `steward admin backup FILE` writes FILE.partial and renames it once whole. In a folder others
// may write, a FILE.partial planted beforehand (a world-writable file, or a link to a file of the
// planter's) must not become the backup: the client makes FILE.partial new (O_EXCL) without
// following a link (O_NOFOLLOW), and refuses with a message naming it. The stand-in server answers
// the backup as a Steward server would, with bytes that stand for the archive.

import {
  chmodSync,
  existsSync,
  lstatSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanup, cli, tempDir } from "../helpers/steward.ts";

const ARCHIVE = "stands for the archive: admin-token inside\n";
const dir = tempDir("steward-backup-partial-");
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.method === "POST" && request.url === "/api/v1/admin/backup") {
      response.writeHead(200, { "content-type": "application/gzip" });
      return response.end(ARCHIVE);
    }
    response.writeHead(404, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: { code: "not_found", message: "not found" } }));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.close();
  server.closeAllConnections();
  cleanup(dir);
});

const backup = (file: string) => cli({ url, token: "admin" }, ["admin", "backup", file]);

describe("steward admin backup FILE", () => {
  it("writes FILE whole, mode 0600, with no FILE.partial left", async () => {
    const file = join(dir, "fine.tar.gz");
    const result = await backup(file);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(file, "utf8")).toBe(ARCHIVE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(existsSync(`${file}.partial`)).toBe(false);
  });

  it("refuses a planted world-writable FILE.partial and writes nothing into it", async () => {
    const file = join(dir, "planted.tar.gz");
    writeFileSync(`${file}.partial`, "");
    chmodSync(`${file}.partial`, 0o666);
    const result = await backup(file);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`${file}.partial already exists`);
    expect(readFileSync(`${file}.partial`, "utf8")).toBe("");
    expect(existsSync(file)).toBe(false);
  });

  it("refuses a FILE.partial that is a link, and does not write through it", async () => {
    const file = join(dir, "linked.tar.gz");
    const elsewhere = join(dir, "planter-reads-this");
    writeFileSync(elsewhere, "");
    symlinkSync(elsewhere, `${file}.partial`);
    const result = await backup(file);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`${file}.partial already exists`);
    expect(readFileSync(elsewhere, "utf8")).toBe("");
    expect(lstatSync(`${file}.partial`).isSymbolicLink()).toBe(true);
    expect(existsSync(file)).toBe(false);
  });

  it("refuses a dangling link as FILE.partial (it would make the link's target)", async () => {
    const file = join(dir, "dangling.tar.gz");
    const target = join(dir, "made-through-the-link");
    symlinkSync(target, `${file}.partial`);
    const result = await backup(file);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`${file}.partial already exists`);
    expect(existsSync(target)).toBe(false);
  });
});
