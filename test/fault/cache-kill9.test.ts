// kill -9 of an agent while it downloads a URL input into its content cache: the part it had is in
// cache/tmp/ only, never under cache/objects/ (no half file in the cache); the agent started again
// with the same work folder empties tmp/, and the task still succeeds, its file fetched whole and
// kept in the cache by its digest.

import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { type FileServer, startFileServer } from "../helpers/file-server.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let data: FileServer | undefined;
let server: (StewardProcess & { joinToken: string }) | undefined;
const agents: AgentProcess[] = [];

afterEach(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  await data?.close();
  cleanup(server?.data ?? "", ...agents.map((agent) => agent.work));
});

/** The files of a folder of the agent's cache, with their sizes. */
function filesIn(work: string, part: string): { name: string; bytes: number }[] {
  const dir = join(work, "cache", part);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).map((name) => ({ name, bytes: statSync(join(dir, name)).size }));
}

it("kill -9 of the agent mid-download leaves no half file in the cache, and the task finishes after a restart", async () => {
  const content = randomBytes(1024 * 1024);
  const digest = createHash("sha256").update(content).digest("hex");
  // About 5 s for the whole file: time to kill the agent halfway.
  data = await startFileServer({ "/slow.bin": { content, trickleBytes: 32 * 1024, trickleMs: 150 } });
  server = await startServerProcess();
  const first = await startAgentProcess({ name: "k1", servers: [server.url], joinToken: server.joinToken });
  agents.push(first);
  await waitFor("the agent connected", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 1);
  const { id } = await api(server, "POST", "/api/v1/jobs", {
    command: `test "$(sha256sum slow.bin | cut -d' ' -f1)" = ${digest}`,
    inputs: [{ url: `${data.url}/slow.bin`, sha256: digest }],
  });
  const part = await waitFor("a part of the file in the cache's tmp/", () =>
    filesIn(first.work, "tmp").find((file) => file.bytes > 64 * 1024),
  );
  expect(part.bytes).toBeLessThan(content.length);
  await first.kill9();
  expect(filesIn(first.work, "objects")).toStrictEqual([]);
  expect(filesIn(first.work, "tmp").map((file) => file.name)).toContain(part.name);

  // The data server is quick now; the agent comes back with the same work folder.
  data.files.set("/slow.bin", { content });
  const second = await startAgentProcess({
    name: "k1",
    work: first.work,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  agents.push(second);
  const ended = await waitForJobEnd(server, id, 90_000);
  expect(ended.state).toBe("succeeded");
  expect(filesIn(first.work, "objects")).toStrictEqual([{ name: digest, bytes: content.length }]);
  expect(filesIn(first.work, "tmp")).toStrictEqual([]);
});
