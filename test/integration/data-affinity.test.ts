// Data affinity with real processes: a server and two agents of two slots, c1 and c2. A first job,
// kept to c2, leaves its uploaded input in c2's content cache; c2's next heartbeat says so. A job
// uploading the same bytes then starts on c2 while both hosts are free (without the data term the
// tie goes to c1, by name), and `steward explain` names c2 as holding its input. With c2 full, the
// next such job starts on c1 at once: a free host is never left idle for a busy one holding the data.

import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { hostCacheCounters } from "../helpers/metrics-scrape.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";
import { submitUploading } from "../helpers/submit-uploading.ts";

const INPUT = randomBytes(1024 * 1024);
const DIGEST = createHash("sha256").update(INPUT).digest("hex");

let server: (StewardProcess & { joinToken: string }) | undefined;
const agents: AgentProcess[] = [];

beforeAll(async () => {
  server = await startServerProcess();
  for (const name of ["c1", "c2"])
    agents.push(
      await startAgentProcess({ name, slots: 2, servers: [server.url], joinToken: server.joinToken }),
    );
  await waitFor(
    "the agents connected",
    async () => (await api(server!, "GET", "/api/v1/hosts")).length === 2,
  );
});

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await server?.stop();
  cleanup(server?.data ?? "", ...agents.map((agent) => agent.work));
});

/** Submits a job with `data.bin` uploaded; its id. */
function submitWithInput(job: Record<string, unknown>): Promise<string> {
  return submitUploading(server!, job, { "data.bin": INPUT });
}

/** The host the job's task 0 runs on, once it runs. */
function runningOn(id: string): Promise<string> {
  return waitFor(`job ${id} running`, async () => {
    const attempt = (await getJob(server!, id)).tasks[0].attempts[0];
    return attempt?.state === "running" ? attempt.host : null;
  });
}

it("starts a job on the free host whose cache holds its input, and on a free one without it when that host is full", async () => {
  const warm = await submitWithInput({
    command: `test "$(sha256sum data.bin | cut -d' ' -f1)" = ${DIGEST}`,
    requirements: 'host.name == "c2"',
  });
  expect((await waitForJobEnd(server!, warm)).state).toBe("succeeded");
  // The heartbeat that shows c2's cache holding the input says which object it is, too.
  await waitFor(
    "c2's cache known to hold the input",
    async () => (await hostCacheCounters(server!, "c2"))?.held === INPUT.length,
  );

  const near = await submitWithInput({ command: "sleep 60" });
  expect(await runningOn(near)).toBe("c2");
  const explained = await cli(server!, ["explain", near]);
  expect(explained.code).toBe(0);
  expect(explained.stdout).toContain(
    "data affinity: hosts whose cache holds more of its 1 input known by digest",
  );
  expect(explained.stdout).toContain("c2 1.0 MiB");
  const json = JSON.parse((await cli(server!, ["explain", near, "--json"])).stdout);
  expect(json.data).toMatchObject({ inputs: 1, hosts: [{ host: "c2", bytes: INPUT.length }] });

  // c2 full: the next job that reads the input starts on c1 at once.
  const filler = await api(server!, "POST", "/api/v1/jobs", {
    command: "sleep 60",
    requirements: 'host.name == "c2"',
  });
  expect(await runningOn(filler.id)).toBe("c2");
  const far = await submitWithInput({ command: "sleep 60" });
  expect(await runningOn(far)).toBe("c1");

  for (const id of [near, filler.id, far]) await api(server!, "POST", `/api/v1/jobs/${id}/cancel`);
  for (const id of [near, filler.id, far]) expect((await waitForJobEnd(server!, id)).state).toBe("cancelled");
});
