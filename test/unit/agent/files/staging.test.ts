// An attempt's outputs wait out a server that answers "not now" (a broker whose store is
// unavailable answers 503) longer than the client's own budget, and are uploaded once it serves;
// an answer that is not "not now" ends the wait at once.
// An output the server refuses for its full storage (507) is sent again later: the waits between
// tries double from a second up to half a minute.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  OUTPUT_STORAGE_FULL_FIRST_DELAY_MS,
  OUTPUT_STORAGE_FULL_MAX_DELAY_MS,
  stageOutputs,
  storageFullDelayMs,
} from "../../../../src/agent/files/staging.ts";
import type { StartMessage } from "../../../../src/common/protocol/messages.ts";
import { HttpClient } from "../../../../src/common/transport/http-client.ts";

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** A server answering each PUT with `answer(try number)`, keeping the bodies it took. */
async function filesServer(answer: (tries: number) => number): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  let tries = 0;
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => {
      body += String(chunk);
    });
    request.on("end", () => {
      const status = answer(++tries);
      if (status === 200) bodies.push(body);
      response.writeHead(status, status === 503 ? { "retry-after": "0" } : {});
      response.end(
        status === 503 ? '{"error":{"code":"store_unavailable","message":"store unavailable"}}' : "",
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closing.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}

async function runDirWithOutput(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "steward-staging-"));
  closing.push(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, "result"), "42\n");
  return dir;
}

const spec = { jobId: "7", taskIndex: 0, attempt: 1, outputs: ["result"] } as unknown as StartMessage;

describe("stageOutputs", () => {
  it("waits out 503s for longer than the client's budget, then uploads", async () => {
    const started = Date.now();
    const server = await filesServer(() => (Date.now() - started < 400 ? 503 : 200));
    // A client that would give up after 50 ms of "not now" on its own.
    const http = new HttpClient({
      baseUrl: server.url,
      retry: { budgetMs: 50, firstDelayMs: 5, maxDelayMs: 20 },
    });
    const staged = await stageOutputs(http, spec, await runDirWithOutput(), null);
    expect(staged).toStrictEqual({ uploaded: ["result"], refused: [] });
    expect(server.bodies).toStrictEqual(["42\n"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });

  it("stops at once at an answer that is not 'not now'", async () => {
    const server = await filesServer((tries) => (tries < 3 ? 503 : 409));
    const http = new HttpClient({
      baseUrl: server.url,
      retry: { budgetMs: 50, firstDelayMs: 5, maxDelayMs: 20 },
    });
    await expect(stageOutputs(http, spec, await runDirWithOutput(), null)).rejects.toThrow(/HTTP 409/);
    expect(server.bodies).toStrictEqual([]);
  });
});

it("waits a second after the first refusal, doubling up to half a minute", () => {
  expect(OUTPUT_STORAGE_FULL_FIRST_DELAY_MS).toBe(1000);
  expect(OUTPUT_STORAGE_FULL_MAX_DELAY_MS).toBe(30_000);
  const cases: [number, number][] = [
    [0, 1000],
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [5, 16_000],
    [6, 30_000],
    [40, 30_000],
  ];
  for (const [tries, wait] of cases) expect(storageFullDelayMs(tries), `after ${tries}`).toBe(wait);
});
