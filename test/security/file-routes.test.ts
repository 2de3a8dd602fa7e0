// Every route that moves a file, broken mid-transfer by its client: uploads cut off (inputs at
// submit, outputs and checkpoint objects from the agent), downloads dropped after their first bytes
// (inputs to the agent, outputs, checkpoint objects, a followed log, the event stream), and an
// agent's WebSocket cut inside a frame. After each, the broker answers /healthz, keeps nothing of
// the broken upload, and goes on running jobs. And file paths that leave their folder, sent as
// they are (fetch would normalise them), answer 4xx.

import { createHash } from "node:crypto";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawRequest } from "../helpers/raw-http.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  hostCredentialOf,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const BIG = 8 * 1024 * 1024;

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;
/** The agent's host credential: what it presents on the agents' file routes. */
let hostToken: string;
/** A job still running on the agent (attempt 1 of task 0), with an 8 MB input and a checkpoint. */
let running: string;
/** A job that succeeded with an 8 MB output. */
let finished: string;
let checkpointSha: string;

beforeAll(async () => {
  server = await startServerProcess();
  agent = await startAgentProcess({ name: "h1", servers: [server.url], joinToken: server.joinToken });
  hostToken = await hostCredentialOf(agent.work);
  const form = new FormData();
  form.append(
    "job",
    JSON.stringify({ command: "echo started; sleep 120", inputs: ["big"], outputs: ["out"] }),
  );
  form.append("big", new Blob([Buffer.alloc(BIG, 7)]), "big");
  const submitted = await fetch(`${server.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}` },
    body: form,
  });
  expect(submitted.status).toBe(201);
  running = ((await submitted.json()) as { id: string }).id;
  await waitFor("the job to run", async () => (await getJob(server, running)).state === "running");

  // A checkpoint of 8 MB, uploaded and committed through the running attempt, as its agent would.
  const object = Buffer.alloc(BIG, 3);
  checkpointSha = createHash("sha256").update(object).digest("hex");
  const base = `${server.url}/api/v1/agent/jobs/${running}/tasks/0/attempts/1/checkpoint`;
  const headers = { authorization: `Bearer ${hostToken}` };
  const put = await fetch(`${base}/objects/${checkpointSha}`, {
    method: "PUT",
    headers: { ...headers, "content-type": "application/octet-stream" },
    body: object,
  });
  expect(put.status, await put.text()).toBe(200);
  const commit = await fetch(base, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ files: [{ path: "state", sha256: checkpointSha, bytes: BIG }] }),
  });
  expect(commit.status, await commit.text()).toBe(200);

  const made = await api(server, "POST", "/api/v1/jobs", {
    command: `head -c ${BIG} /dev/zero > out`,
    outputs: ["out"],
  });
  finished = (made as { id: string }).id;
  expect((await waitForJobEnd(server, finished)).state).toBe("succeeded");
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "");
});

/** Sends the head and `sendBytes` of a body announced as `totalBytes`, then drops the connection. */
async function cutUpload(path: string, token: string, contentType: string, totalBytes: number, prefix = "") {
  const { hostname, port } = new URL(server.url);
  const socket = connect(Number(port), hostname);
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.write(
    `PUT ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: ${contentType}\r\nContent-Length: ${totalBytes}\r\n\r\n`.replace(
      /^PUT/,
      contentType.startsWith("multipart") ? "POST" : "PUT",
    ),
  );
  if (prefix) socket.write(prefix);
  socket.write(Buffer.alloc(1024 * 1024, 1));
  await sleep(200);
  socket.resetAndDestroy();
}

/** Asks for `path`, reads its first bytes, then drops the connection. */
async function cutDownload(path: string, token: string): Promise<number> {
  const controller = new AbortController();
  const response = await fetch(`${server.url}${path}`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  expect(response.status, path).toBe(200);
  const reader = response.body!.getReader();
  const first = await reader.read();
  controller.abort();
  await reader.cancel().catch(() => {});
  return first.value?.length ?? 0;
}

async function expectServing(): Promise<void> {
  const health = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(2000) });
  expect(health.status).toBe(200);
  expect((await getJob(server, running)).state).toBe("running");
}

describe("a transfer broken by its client", () => {
  it("an input upload cut off mid-file leaves no job and no blob", async () => {
    const before = (await api(server, "GET", "/api/v1/jobs?all=1")) as unknown[];
    const boundary = "cut";
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="job"\r\n\r\n${JSON.stringify({ command: "cat in", inputs: ["in"] })}\r\n--${boundary}\r\nContent-Disposition: form-data; name="in"; filename="in"\r\nContent-Type: application/octet-stream\r\n\r\n`;
    await cutUpload("/api/v1/jobs", server.token, `multipart/form-data; boundary=${boundary}`, BIG, head);
    await expectServing();
    const after = (await api(server, "GET", "/api/v1/jobs?all=1")) as unknown[];
    expect(after.length).toBe(before.length);
  });

  it("an output upload cut off mid-file stores nothing", async () => {
    await cutUpload(
      `/api/v1/agent/jobs/${running}/tasks/0/attempts/1/outputs/out`,
      hostToken,
      "application/octet-stream",
      BIG,
    );
    await expectServing();
  });

  it("a checkpoint object upload cut off mid-file stores nothing", async () => {
    await cutUpload(
      `/api/v1/agent/jobs/${running}/tasks/0/attempts/1/checkpoint/objects/${"ab".repeat(32)}`,
      hostToken,
      "application/octet-stream",
      BIG,
    );
    await expectServing();
    const missing = await fetch(
      `${server.url}/api/v1/agent/jobs/${running}/tasks/0/checkpoint/objects/${"ab".repeat(32)}`,
      { headers: { authorization: `Bearer ${hostToken}` } },
    );
    expect(missing.status).toBe(404);
  });

  it.each([
    ["an input to the agent", () => `/api/v1/agent/jobs/${running}/inputs/big`, () => hostToken],
    [
      "a checkpoint object",
      () => `/api/v1/agent/jobs/${running}/tasks/0/checkpoint/objects/${checkpointSha}`,
      () => hostToken,
    ],
    ["an output", () => `/api/v1/jobs/${finished}/outputs/0/out`, () => server.token],
    ["a followed log", () => `/api/v1/jobs/${running}/logs?follow=1`, () => server.token],
  ])("a download of %s dropped after its first bytes", async (_what, path, token) => {
    expect(await cutDownload(path(), token())).toBeGreaterThan(0);
    await expectServing();
  });

  it("the event stream dropped mid-stream", async () => {
    const controller = new AbortController();
    const response = await fetch(`${server.url}/api/v1/events?after=0`, {
      headers: { authorization: `Bearer ${server.token}` },
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await expectServing();
  });

  it("an agent's WebSocket cut inside a frame", async () => {
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(
      "GET /api/v1/agent/connect HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    );
    await new Promise((resolve) => socket.once("data", resolve));
    // A masked text frame announcing 60,000 bytes, of which 100 come.
    const header = Buffer.from([0x81, 0xfe, 0xea, 0x60, 1, 2, 3, 4]);
    socket.write(Buffer.concat([header, Buffer.alloc(100, 0x61)]));
    await sleep(100);
    socket.resetAndDestroy();
    await expectServing();
  });

  it("after all of them, the broker still runs a job to the end", async () => {
    const made = await api(server, "POST", "/api/v1/jobs", { command: "echo done" });
    expect((await waitForJobEnd(server, (made as { id: string }).id)).state).toBe("succeeded");
  });
});

describe("a file path that leaves its folder", () => {
  it.each([
    "../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%2E%2E/%2E%2E/etc/passwd",
    "a/./b",
    "a//b",
    "out%00",
  ])("GET outputs/0/%s answers 4xx with a message", async (path) => {
    const answer = await rawRequest(server.url, {
      method: "GET",
      path: `/api/v1/jobs/${finished}/outputs/0/${path}`,
      headers: { authorization: `Bearer ${server.token}` },
      body: "",
      timeoutMs: 5000,
    });
    expect(answer.status, answer.body).toBeGreaterThanOrEqual(400);
    expect(answer.status, answer.body).toBeLessThan(500);
    expect(typeof JSON.parse(answer.body).error.message).toBe("string");
  });
});
