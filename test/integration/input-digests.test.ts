// The digest of an uploaded input comes with the start: a real server and agent, the agent's
// requests through a proxy that counts them, stage an uploaded input with one GET and no HEAD (the
// server put the digest it stored in the start message). Against a stand-in of a server of an
// earlier version, whose starts carry no digests, the agent asks with a HEAD first and stages the
// input as before; given a digest, it sends no HEAD to that server either.

import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { ContentCache, GIB } from "../../src/agent/cache/content-cache.ts";
import { stageInputs } from "../../src/agent/files/staging.ts";
import { INPUT_DIGEST_HEADER, type StartMessage } from "../../src/common/protocol/messages.ts";
import { HttpClient } from "../../src/common/transport/http-client.ts";
import { type CountingProxy, countingProxy } from "../helpers/counting-proxy.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const INPUT = randomBytes(256 * 1024);
const DIGEST = createHash("sha256").update(INPUT).digest("hex");

let server: (StewardProcess & { joinToken: string }) | undefined;
let proxy: CountingProxy | undefined;
let agent: AgentProcess | undefined;

beforeAll(async () => {
  server = await startServerProcess();
  proxy = await countingProxy(server.url);
  agent = await startAgentProcess({ name: "d1", servers: [proxy.url], joinToken: server.joinToken });
  await waitFor("the agent connected", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 1);
});

afterAll(async () => {
  await agent?.stop();
  await proxy?.close();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "");
});

it("stages an uploaded input by the digest of the start: one GET of it, no HEAD", async () => {
  const form = new FormData();
  const check = `test "$(sha256sum data.bin | cut -d' ' -f1)" = ${DIGEST}`;
  form.append("job", JSON.stringify({ command: check, array: 2, inputs: ["data.bin"] }));
  form.append("data.bin", new Blob([INPUT]), "data.bin");
  const response = await fetch(`${server!.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${server!.token}` },
    body: form,
  });
  expect(response.status).toBe(201);
  const { id } = (await response.json()) as { id: string };
  expect((await waitForJobEnd(server!, id)).state).toBe("succeeded");
  const input = `/api/v1/agent/jobs/${id}/inputs/data.bin`;
  const asked = proxy!.requests.filter((line) => line.endsWith(input));
  // Two tasks on one host: the first fetches the file into the cache, the second finds it there.
  expect(asked).toStrictEqual([`GET ${input}`]);
  expect(proxy!.requests.filter((line) => line.startsWith("HEAD "))).toStrictEqual([]);
  expect(existsSync(join(agent!.work, "cache", "objects", DIGEST))).toBe(true);
});

it("so does a workflow's job: its input's digest comes with its start", async () => {
  const form = new FormData();
  const check = `test "$(sha256sum data.bin | cut -d' ' -f1)" = ${DIGEST}`;
  form.append("workflow", JSON.stringify({ jobs: { w: { command: check, inputs: ["data.bin"] } } }));
  form.append("w/data.bin", new Blob([INPUT]), "data.bin");
  const response = await fetch(`${server!.url}/api/v1/workflows`, {
    method: "POST",
    headers: { authorization: `Bearer ${server!.token}` },
    body: form,
  });
  expect(response.status).toBe(201);
  const { jobs } = (await response.json()) as { jobs: Record<string, string> };
  expect((await waitForJobEnd(server!, jobs.w)).state).toBe("succeeded");
  const input = `/api/v1/agent/jobs/${jobs.w}/inputs/data.bin`;
  // The same bytes as the first test's: the cache holds them, and nothing of the job is asked for.
  expect(proxy!.requests.filter((line) => line.endsWith(input))).toStrictEqual([]);
  expect(proxy!.requests.filter((line) => line.startsWith("HEAD "))).toStrictEqual([]);
});

// ---- a stand-in of a server of an earlier version: its inputs route alone, requests counted

const JOB = "7";
const ROUTE = `/api/v1/agent/jobs/${JOB}/inputs/data.bin`;
let standIn: Server | undefined;
let standInUrl = "";
const seen: string[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  standIn = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    if (request.url !== ROUTE) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-length": INPUT.length, [INPUT_DIGEST_HEADER]: DIGEST });
    response.end(request.method === "HEAD" ? undefined : INPUT);
  });
  await new Promise<void>((resolve) => standIn!.listen(0, "127.0.0.1", resolve));
  standInUrl = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
});

afterAll(async () => {
  standIn?.closeAllConnections();
  await new Promise((resolve) => standIn?.close(resolve));
});

afterEach(() => {
  seen.length = 0;
  cleanup(...dirs.splice(0));
});

function start(fields: Partial<StartMessage>): StartMessage {
  return {
    type: "start",
    jobId: JOB,
    taskIndex: 0,
    attempt: 1,
    owner: "alice",
    restarted: false,
    command: "true",
    env: {},
    inputs: ["data.bin"],
    outputs: [],
    cpus: 1,
    timeLimitSeconds: null,
    graceSeconds: 0,
    checkpointIntervalSeconds: 60,
    ...fields,
  };
}

/** Stages the start's inputs into a new folder through a new cache; the folder and the cache. */
async function staged(spec: StartMessage): Promise<{ run: string; cache: ContentCache }> {
  const run = tempDir("steward-staging-run-");
  const work = tempDir("steward-staging-cache-");
  dirs.push(run, work);
  const cache = new ContentCache(join(work, "cache"), GIB);
  await cache.load();
  await stageInputs({ http: new HttpClient({ baseUrl: standInUrl }), cache }, spec, run);
  return { run, cache };
}

it("without digests in the start (a server of an earlier version), asks with a HEAD and stages as before", async () => {
  const { run, cache } = await staged(start({}));
  expect(seen).toStrictEqual([`HEAD ${ROUTE}`, `GET ${ROUTE}`]);
  expect(readFileSync(join(run, "data.bin")).equals(INPUT)).toBe(true);
  expect(cache.objects).toStrictEqual([DIGEST]);
});

it("with the input's digest in the start, sends no HEAD; another input's digest does not stand for it", async () => {
  const { run, cache } = await staged(start({ inputDigests: { "data.bin": DIGEST } }));
  expect(seen).toStrictEqual([`GET ${ROUTE}`]);
  expect(readFileSync(join(run, "data.bin")).equals(INPUT)).toBe(true);
  expect(cache.objects).toStrictEqual([DIGEST]);
  seen.length = 0;
  await staged(start({ inputDigests: { "other.bin": DIGEST } }));
  expect(seen).toStrictEqual([`HEAD ${ROUTE}`, `GET ${ROUTE}`]);
});
