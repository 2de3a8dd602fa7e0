// A gang rank's checkpoint is committed under the generation the job declared only with that
// generation's files: a job that saves its next state while the agent scans the folder (the SDK
// takes the declaration back first) gets no commit that round, and the next round commits the new
// state under its own generation. Real files, the real SDK, a loopback HTTP server for the broker.

import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { CheckpointSync } from "../../../../src/agent/files/checkpoint.ts";
import { HttpClient } from "../../../../src/common/transport/http-client.ts";

interface Committed {
  generation: number;
  files: Record<string, string>;
}

describe("a gang rank's checkpoint and its declared generation", () => {
  let dir: string;
  let server: Server;
  let objects: Map<string, Buffer>;
  let commits: Committed[];
  let sync: CheckpointSync;
  let sdk: {
    saveCheckpoint: (data: unknown, name?: string) => void;
    checkpointGeneration: (generation: number) => void;
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "steward-gang-ckpt-"));
    objects = new Map();
    commits = [];
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks);
        const object = /\/checkpoint\/objects\/([0-9a-f]{64})$/.exec(request.url ?? "");
        if (request.method === "PUT" && object) {
          objects.set(object[1], body);
          response.writeHead(200, { "content-type": "application/json" }).end("{}");
          return;
        }
        const manifest = JSON.parse(body.toString("utf8")) as {
          files: { path: string; sha256: string }[];
          gang: { generation: number };
        };
        const files: Record<string, string> = {};
        for (const file of manifest.files) files[file.path] = String(objects.get(file.sha256));
        commits.push({ generation: manifest.gang.generation, files });
        response
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ generation: manifest.gang.generation, bytes: 0, previous: null }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const checkpointDir = join(dir, "checkpoint");
    sync = new CheckpointSync({
      http: new HttpClient({ baseUrl: `http://127.0.0.1:${port}`, token: "t" }),
      jobId: "7",
      taskIndex: 0,
      attempt: 1,
      dir: checkpointDir,
      rank: 1,
    });
    vi.stubEnv("STEWARD_CHECKPOINT_DIR", checkpointDir);
    sdk = await import("../../../../src/common/sdk/index.js");
  });

  afterEach(async () => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  test("saveCheckpoint takes the declaration back until checkpointGeneration gives the next one", async () => {
    sdk.saveCheckpoint({ iteration: 1 });
    sdk.checkpointGeneration(1);
    expect(await readFile(join(dir, "checkpoint", ".generation"), "utf8")).toBe("1");
    sdk.saveCheckpoint({ iteration: 2 });
    await expect(readFile(join(dir, "checkpoint", ".generation"), "utf8")).rejects.toThrow(/ENOENT/);
    expect(await sync.sync()).toBeNull();
    expect(commits).toEqual([]);
  });

  test("a state saved during the scan is not committed under the generation declared before it", async () => {
    sdk.saveCheckpoint({ iteration: 1 });
    sdk.checkpointGeneration(1);
    // The job goes on while the agent scans: it saves iteration 2 (and has not declared it yet).
    const prototype = CheckpointSync.prototype as unknown as { scan: () => Promise<unknown> };
    const scan = prototype.scan;
    const spy = vi.spyOn(prototype, "scan").mockImplementationOnce(async function (this: CheckpointSync) {
      sdk.saveCheckpoint({ iteration: 2 });
      return scan.call(this);
    });
    expect(await sync.sync()).toBeNull();
    expect(spy).toHaveBeenCalledTimes(1);
    expect(commits).toEqual([]);
    sdk.checkpointGeneration(2);
    expect(await sync.sync()).toBe(2);
    expect(commits).toEqual([{ generation: 2, files: { "state.json": JSON.stringify({ iteration: 2 }) } }]);
  });

  test("a declaration that stands through the scan is committed with its files", async () => {
    sdk.saveCheckpoint({ iteration: 3 });
    sdk.checkpointGeneration(3);
    expect(await sync.sync()).toBe(3);
    const state = JSON.stringify({ iteration: 3 });
    expect(commits).toEqual([{ generation: 3, files: { "state.json": state } }]);
    expect(objects.has(createHash("sha256").update(state).digest("hex"))).toBe(true);
    // Declared once, committed once.
    expect(await sync.sync()).toBeNull();
    expect(commits).toHaveLength(1);
  });
});
