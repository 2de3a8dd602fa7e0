// A job that replaces its checkpoint file without pause (write a temporary file, rename it over)
// while the agent uploads: every upload sends exactly what it hashed (a snapshot of the file), no
// upload fails, and the state restored on another host is one whole version of the file.

import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let server: (StewardProcess & { joinToken: string }) | undefined;
const agents: AgentProcess[] = [];

afterAll(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(server?.data ?? "", ...agents.map((agent) => agent.work));
});

it("uploads a checkpoint file the job keeps replacing, without a failed upload, and restores a whole version", async () => {
  server = await startServerProcess();
  const s = server;
  for (const name of ["r1", "r2"])
    agents.push(await startAgentProcess({ name, slots: 1, servers: [s.url], joinToken: s.joinToken }));
  await waitFor("2 hosts", async () => (await api(s, "GET", "/api/v1/hosts")).length === 2);
  const script = join(import.meta.dirname, "../helpers/churn-checkpoint.mjs");
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: ["node", script],
    checkpoint: { intervalSeconds: 0.2, graceSeconds: 2 },
  });
  const running = await waitFor(
    "several checkpoints of the churning file",
    async () => {
      const job = await getJob(s, id);
      return (job.tasks[0].checkpoint?.generation ?? 0) >= 8 ? job.tasks[0].attempts[0] : null;
    },
    60_000,
    200,
  );
  const first = agents.find((agent) => agent.name === running.host)!;
  expect(first.output()).not.toMatch(/checkpoint upload failed|could not be read/);
  // Moved to the other host, the attempt finds one whole version of the file.
  await api(s, "POST", `/api/v1/jobs/${id}/migrate`, {});
  const job = await waitForJobEnd(s, id, 60_000);
  expect(job.state).toBe("succeeded");
  const log = await fetch(`${s.url}/api/v1/jobs/${id}/logs?task=0`, {
    headers: { authorization: `Bearer ${s.token}` },
  });
  expect(await log.text()).toContain(`restored ${1 << 20} bytes, whole`);
  expect(first.output()).not.toMatch(/checkpoint upload failed|could not be read/);
}, 120_000);
