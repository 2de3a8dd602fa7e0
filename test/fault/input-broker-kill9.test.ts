// kill -9 of the server while an agent downloads a large uploaded input (200 MB, through a proxy
// that passes it on at a bounded rate, so that the kill lands mid-transfer): the part the agent
// had is in its cache's tmp/ only, never under objects/; the server started again on the same data
// folder and port still has the input, the agent's download resumes there (a Range from where it
// broke), and the job succeeds with its one attempt. The cache then holds the input whole and
// verified under its digest, and nothing else: no part left in tmp/, no other file.

import { createHash, randomBytes } from "node:crypto";
import { createReadStream, existsSync, openAsBlob, readdirSync, statSync, writeFileSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
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

const MB = 1024 * 1024;
const SIZE = 200 * MB;
/** The proxy passes the input on at this rate: about 5 s for the whole. */
const RATE = 40 * MB;

const servers: StewardProcess[] = [];
let proxy: CountingProxy | undefined;
let agent: AgentProcess | undefined;
const dirs: string[] = [];

afterEach(async () => {
  await agent?.crash();
  await proxy?.close();
  for (const server of servers) await server.stop();
  cleanup(...dirs, agent?.work ?? "", ...servers.map((server) => server.data));
});

/** A 200 MB file of 1 MB random blocks, each told apart by its index; its path and SHA-256. */
async function largeInput(): Promise<{ path: string; sha256: string }> {
  const dir = tempDir("steward-large-input-");
  dirs.push(dir);
  const path = join(dir, "big.bin");
  writeFileSync(path, "");
  const hash = createHash("sha256");
  const block = randomBytes(MB);
  for (let index = 0; index < SIZE / MB; index++) {
    block.writeUInt32BE(index, 0);
    hash.update(block);
    await appendFile(path, block);
  }
  return { path, sha256: hash.digest("hex") };
}

/** The files of a folder of the agent's cache, with their sizes. */
function filesIn(work: string, part: string): { name: string; bytes: number }[] {
  const dir = join(work, "cache", part);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).map((name) => ({ name, bytes: statSync(join(dir, name)).size }));
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

it("kill -9 of the server mid-transfer of an uploaded input: nothing lost, no half file in the cache, one attempt", async () => {
  const input = await largeInput();
  const options = { heartbeatSeconds: 1, hostTimeoutSeconds: 15 };
  const first = await startServerProcess(options);
  servers.push(first);
  proxy = await countingProxy(first.url, {
    bytesPerSecond: (request) => (/^GET .*\/inputs\//.test(request) ? RATE : null),
  });
  agent = await startAgentProcess({ name: "k9", servers: [proxy.url], joinToken: first.joinToken });
  await waitFor("the agent connected", async () => (await api(first, "GET", "/api/v1/hosts")).length === 1);

  const form = new FormData();
  form.append(
    "job",
    JSON.stringify({
      command: `test "$(sha256sum big.bin | cut -d' ' -f1)" = ${input.sha256}`,
      inputs: ["big.bin"],
    }),
  );
  form.append("big.bin", await openAsBlob(input.path), "big.bin");
  const submitted = await fetch(`${first.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${first.token}` },
    body: form,
  });
  expect(submitted.status).toBe(201);
  const { id } = (await submitted.json()) as { id: string };

  // Mid-transfer: a part of the file in the cache's tmp/, well short of the whole.
  const part = await waitFor(
    "a part of the input in the cache's tmp/",
    () => filesIn(agent!.work, "tmp").find((file) => file.bytes > 40 * MB),
    60_000,
  );
  expect(part.bytes).toBeLessThan(SIZE);
  await first.kill9();
  expect(filesIn(agent.work, "objects")).toStrictEqual([]);
  expect(filesIn(agent.work, "tmp").map((file) => file.name)).toStrictEqual([part.name]);

  // Down for longer than a heartbeat, then back on the same data folder and port.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const second = await startServerProcess({ ...options, data: first.data, port: first.port });
  servers.push(second);
  const ended = await waitForJobEnd(second, id, 120_000);
  expect(ended.state).toBe("succeeded");
  expect(ended.tasks[0].attempts).toHaveLength(1);
  expect(ended.tasks[0].attempts[0]).toMatchObject({ number: 1, outcome: "succeeded" });

  // The download went on from where the kill broke it, at the server started again.
  const asked = proxy.answers.filter((answer) => answer.request.endsWith(`/jobs/${id}/inputs/big.bin`));
  expect(asked.map((answer) => answer.status)).toStrictEqual([200, 206]);
  const from = Number(/^bytes=(\d+)-$/.exec(asked[1].range ?? "")?.[1]);
  expect(from).toBeGreaterThanOrEqual(part.bytes);
  expect(from).toBeLessThanOrEqual(asked[0].bytes);
  expect(asked[1].bytes).toBe(SIZE - from);

  // The cache holds the input whole and verified, and nothing else.
  expect(filesIn(agent.work, "objects")).toStrictEqual([{ name: input.sha256, bytes: SIZE }]);
  expect(await sha256Of(join(agent.work, "cache", "objects", input.sha256))).toBe(input.sha256);
  expect(filesIn(agent.work, "tmp")).toStrictEqual([]);
  expect(readdirSync(join(agent.work, "cache")).sort()).toStrictEqual(["objects", "tmp", "urls"]);
  expect(filesIn(agent.work, "urls")).toStrictEqual([]);
}, 240_000);
