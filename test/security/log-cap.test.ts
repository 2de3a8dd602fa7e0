// A job's log has a size limit (issue 22, item 7c): a job printing without end must not fill the
// broker's disk. With `--max-log-mb 1` the log of an attempt stops at 1 MiB and ends with one
// marker line; the job goes on running. A real `steward up` (server and agent) and a real job.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, expect, it } from "vitest";
import { WebSocket } from "ws";
import { AGENT_CONNECT_PATH, type ServerMessage } from "../../src/common/protocol/messages.ts";
import { facts } from "../helpers/core-harness.ts";
import {
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startServerProcess,
  startUp,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

const MIB = 1024 * 1024;
const MARKER = "\n[steward: log truncated at 1 MB (--max-log-mb); the rest was dropped]\n";

let steward: StewardProcess | undefined;
let server: (StewardProcess & { joinToken: string }) | undefined;
const dir = tempDir("steward-log-cap-");

afterAll(async () => {
  await steward?.stop();
  await server?.stop();
  cleanup(dir, steward?.data ?? "", server?.data ?? "");
});

async function stdout(id: string, from: StewardProcess = steward!): Promise<Buffer> {
  const response = await fetch(`${from.url}/api/v1/jobs/${id}/logs?task=0`, {
    headers: { authorization: `Bearer ${from.token}` },
  });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it("stops a log at --max-log-mb with a marker line, and the job goes on", async () => {
  steward = await startUp({ agents: 1, slots: 1, args: ["--max-log-mb", "1"] });
  const pidFile = join(dir, "pid");
  // About 5 MB a second, without end (`yes` alone would write gigabytes to the agent's disk).
  const { id } = await api(steward, "POST", "/api/v1/jobs", {
    command: `echo $$ > ${pidFile}; while :; do yes steward-log-line | head -c 500000; sleep 0.1; done`,
  });
  await waitFor("the log to reach its cap", async () => (await stdout(id)).length >= MIB, 30_000, 200);
  const pid = Number(readFileSync(pidFile, "utf8"));
  // The job prints 10 MB more meanwhile; the log does not move.
  await sleep(2000);
  const capped = await stdout(id);
  await sleep(2000);
  const later = await stdout(id);
  expect(capped.length, "the log's size at the cap").toBe(MIB + MARKER.length);
  expect(later.length, "the log's size 2 s later").toBe(capped.length);
  expect(later.subarray(MIB).toString()).toBe(MARKER);
  expect(later.subarray(0, 17).toString()).toBe("steward-log-line\n");
  // The job goes on: its process lives and its attempt is running.
  expect(alive(pid), "the job's process is alive").toBe(true);
  expect((await getJob(steward, id)).tasks[0].attempts[0].state).toBe("running");
  await api(steward, "POST", `/api/v1/jobs/${id}/cancel`, {});
}, 90_000);

it("drops what an agent that does not heed the limit sends past it, and writes the marker once", async () => {
  server = await startServerProcess({ hostTimeoutSeconds: 60, args: ["--max-log-mb", "1"] });
  const agent = new WebSocket(`${server.url.replace(/^http/, "ws")}${AGENT_CONNECT_PATH}`);
  const messages: ServerMessage[] = [];
  agent.on("message", (data) => messages.push(JSON.parse(String(data)) as ServerMessage));
  await new Promise((resolve, reject) => {
    agent.once("open", resolve);
    agent.once("error", reject);
  });
  try {
    agent.send(
      JSON.stringify({
        type: "hello",
        v: 1,
        name: "older-agent",
        token: server.joinToken,
        pool: "default",
        slots: 1,
        labels: {},
        facts: facts("older-agent"),
        attempts: [],
      }),
    );
    const welcome = await waitFor("the welcome", () =>
      messages.find((message) => message.type === "welcome"),
    );
    // The limit is in the welcome, for agents that heed it.
    expect(welcome).toMatchObject({ maxLogBytes: MIB });
    const { id } = await api(server, "POST", "/api/v1/jobs", { command: "sleep 1000" });
    await waitFor("the start", () => messages.some((message) => message.type === "start"));
    // 3 MiB in chunks of 256 KiB, then all of it again (as after a reconnect).
    const chunk = 256 * 1024;
    for (let round = 0; round < 2; round++)
      for (let offset = 0; offset < 3 * MIB; offset += chunk)
        agent.send(
          JSON.stringify({
            type: "log",
            jobId: id,
            taskIndex: 0,
            attempt: 1,
            stream: "stdout",
            offset,
            data: Buffer.alloc(chunk, String.fromCharCode(97 + ((offset / chunk) % 26))).toString("base64"),
          }),
        );
    await waitFor("the log at its cap", async () => (await stdout(id, server)).length > MIB);
    await sleep(1000);
    const log = await stdout(id, server);
    expect(log.length).toBe(MIB + MARKER.length);
    expect(log.subarray(MIB).toString()).toBe(MARKER);
    expect(log.subarray(MIB - 1, MIB).toString()).toBe("d");
  } finally {
    agent.terminate();
  }
}, 60_000);
