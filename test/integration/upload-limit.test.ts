// --max-upload-mb: an input, output or checkpoint file larger than the limit is refused with 413 and
// a message that names the limit; nothing of it is kept, and no job is created for a refused submit.

import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { stringify } from "yaml";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

let server: (StewardProcess & { joinToken: string }) | undefined;
const agents: AgentProcess[] = [];
const dir = tempDir("steward-upload-limit-");

afterAll(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(dir, server?.data ?? "", ...agents.map((agent) => agent.work));
});

it("refuses an input larger than --max-upload-mb with 413 and creates no job", async () => {
  server = await startServerProcess({ args: ["--max-upload-mb", "1"] });
  const s = server;
  writeFileSync(join(dir, "big.bin"), Buffer.alloc(2 * 1024 * 1024, 7));
  writeFileSync(join(dir, "job.yaml"), stringify({ command: "wc -c big.bin", inputs: ["big.bin"] }));
  const refused = await cli(s, ["submit", join(dir, "job.yaml")]);
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain(
    "input big.bin is larger than the server's upload limit of 1 MB (--max-upload-mb)",
  );
  expect(await api(s, "GET", "/api/v1/jobs")).toStrictEqual([]);
  // Nothing of the refused input was kept.
  expect(existsSync(join(s.data, "blobs", "jobs", "1", "inputs", "big.bin"))).toBe(false);
  // Under the limit it goes through.
  writeFileSync(join(dir, "big.bin"), Buffer.alloc(512 * 1024, 7));
  const accepted = await cli(s, ["submit", join(dir, "job.yaml")]);
  expect(accepted.code, accepted.stderr).toBe(0);
});

it("an output larger than the limit fails its staging with the limit named", async () => {
  const s = server!;
  agents.push(await startAgentProcess({ name: "u1", slots: 1, servers: [s.url], joinToken: s.joinToken }));
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: "head -c 2000000 /dev/zero > out",
    outputs: ["out"],
  });
  const reason = await waitFor(
    "the first attempt to end",
    async () =>
      (await getJob(s, id)).tasks[0].attempts.find((attempt) => attempt.state === "ended")?.reason ?? null,
    30_000,
    200,
  );
  expect(reason).toContain("HTTP 413");
  expect(reason).toContain("larger than the server's upload limit of 1 MB (--max-upload-mb)");
});
