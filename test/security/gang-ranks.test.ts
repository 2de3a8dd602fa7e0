// Within a multi-node attempt each host writes for the ranks it runs (issue 22, items 1 and 6):
// the host of rank 1 cannot commit rank 0's checkpoint, read rank 0's state, upload rank 0's
// outputs or append to rank 0's log; for its own rank it can. The two hosts are bare agent
// connections: the gang's placement alone decides, nothing needs to run.

import { afterAll, beforeAll, expect, it } from "vitest";
import { WebSocket } from "ws";
import { AGENT_CONNECT_PATH, type ServerMessage } from "../../src/common/protocol/messages.ts";
import { facts } from "../helpers/core-harness.ts";
import {
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startServerProcess,
  waitFor,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
const sockets: WebSocket[] = [];
const credentials = new Map<string, string>();
let id: string;
/** The host of each rank, and the socket of rank 1's host. */
let rankHosts: string[];
let rankOneSocket: WebSocket;

async function join(name: string): Promise<WebSocket> {
  const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}${AGENT_CONNECT_PATH}`);
  sockets.push(ws);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const welcome = new Promise<ServerMessage>((resolve) =>
    ws.once("message", (data) => resolve(JSON.parse(String(data)) as ServerMessage)),
  );
  ws.send(
    JSON.stringify({
      type: "hello",
      v: 1,
      name,
      token: server.joinToken,
      pool: "default",
      slots: 1,
      labels: {},
      facts: facts(name),
      attempts: [],
    }),
  );
  const answer = await welcome;
  if (answer.type !== "welcome" || !answer.credential)
    throw new Error(`not welcomed: ${JSON.stringify(answer)}`);
  credentials.set(name, answer.credential);
  return ws;
}

beforeAll(async () => {
  server = await startServerProcess({ hostTimeoutSeconds: 30 });
  const bySocket = new Map<string, WebSocket>();
  for (const name of ["gang-a", "gang-b"]) bySocket.set(name, await join(name));
  ({ id } = await api(server, "POST", "/api/v1/jobs", {
    command: "sleep 600",
    nodes: 2,
    outputs: ["out"],
    outputsFrom: "all",
  }));
  const placement = await waitFor("the gang placed", async () => {
    const attempt = (await getJob(server, id)).tasks[0].attempts[0];
    return attempt?.placement.length === 2 ? attempt.placement : null;
  });
  rankHosts = [...placement].sort((a, b) => a.rank - b.rank).map((entry) => entry.host);
  rankOneSocket = bySocket.get(rankHosts[1])!;
}, 60_000);

afterAll(async () => {
  for (const ws of sockets) ws.terminate();
  await server?.stop();
  cleanup(server?.data ?? "");
});

/** A call of an agent route on the gang's attempt (1 of task 0) as rank 1's host. */
async function asRankOne(method: string, path: string, body?: string, type?: string) {
  const response = await fetch(`${server.url}/api/v1/agent/jobs/${id}/tasks/0${path}`, {
    method,
    headers: {
      authorization: `Bearer ${credentials.get(rankHosts[1])}`,
      ...(body === undefined ? {} : { "content-type": type ?? "application/octet-stream" }),
    },
    body,
  });
  return { status: response.status, text: await response.text() };
}

const NOT_HERE = JSON.stringify({ error: { code: "not_found", message: "no such attempt on this host" } });
const commit = (rank: number) =>
  asRankOne(
    "POST",
    "/attempts/1/checkpoint",
    JSON.stringify({
      files: [{ path: "state", sha256: "a".repeat(64), bytes: 1 }],
      gang: { rank, generation: 1 },
    }),
    "application/json",
  );

it("rank 1's host writes and reads its own rank's files, not rank 0's", async () => {
  expect(await asRankOne("PUT", "/attempts/1/outputs/rank-0/out", "forged")).toEqual({
    status: 404,
    text: NOT_HERE,
  });
  expect((await asRankOne("PUT", "/attempts/1/outputs/rank-1/out", "mine")).status).toBe(200);
  expect(await commit(0)).toEqual({ status: 404, text: NOT_HERE });
  // Its own rank's commit is taken up, and refused only for the object it did not upload.
  expect((await commit(1)).status).toBe(409);
  expect(await asRankOne("GET", "/checkpoint?rank=0")).toEqual({ status: 404, text: NOT_HERE });
  const own = await asRankOne("GET", "/checkpoint?rank=1");
  expect(own.status).toBe(404);
  expect(own.text).toContain("has no checkpoint");
});

async function log(rank: number): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/jobs/${id}/logs?task=0&stream=stdout&rank=${rank}`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  return response.text();
}

it("rank 1's host appends to rank 1's log only", async () => {
  const line = (text: string) => Buffer.from(text).toString("base64");
  const ref = { type: "log", jobId: id, taskIndex: 0, attempt: 1, stream: "stdout", offset: 0 };
  rankOneSocket.send(JSON.stringify({ ...ref, rank: 0, data: line("forged\n") }));
  rankOneSocket.send(JSON.stringify({ ...ref, rank: 1, data: line("rank one\n") }));
  await waitFor("rank 1's line", async () => (await log(1)) === "rank one\n");
  expect(await log(0)).toBe("");
});
