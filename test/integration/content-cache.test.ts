// The host's content cache with real processes: a server and an agent of four slots. An array of
// four tasks reading one uploaded input copies it to the host once (one miss, three hits, its
// bytes fetched once: /metrics shows the agent's counters), and another job uploading the same
// bytes finds them in the cache (the server's digest is the key, not the job).

import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { hostCacheCounters } from "../helpers/metrics-scrape.ts";
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

const INPUT = randomBytes(1024 * 1024);
const DIGEST = createHash("sha256").update(INPUT).digest("hex");

let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;

beforeAll(async () => {
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "c1",
    slots: 4,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  await waitFor("the agent connected", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 1);
});

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "");
});

/** Submits a job with `data.bin` uploaded; its id. */
async function submitWithInput(job: Record<string, unknown>): Promise<string> {
  const form = new FormData();
  form.append("job", JSON.stringify({ ...job, inputs: ["data.bin"] }));
  form.append("data.bin", new Blob([INPUT]), "data.bin");
  const response = await fetch(`${server!.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${server!.token}` },
    body: form,
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

/** Checks the file it was given, then waits so that the array's tasks run together. */
const CHECK = `test "$(sha256sum data.bin | cut -d' ' -f1)" = ${DIGEST} && sleep 1`;

it("copies an array's uploaded input to the host once, and finds it again for another job", async () => {
  const array = await submitWithInput({ command: CHECK, array: 4 });
  const ended = await waitForJobEnd(server!, array);
  expect(ended.state).toBe("succeeded");
  const counted = await waitFor("the agent's cache counters", async () => {
    const counters = await hostCacheCounters(server!, "c1");
    return counters && counters.hits + counters.misses === 4 ? counters : null;
  });
  expect(counted).toStrictEqual({
    hits: 3,
    misses: 1,
    fetched: INPUT.length,
    saved: 3 * INPUT.length,
    held: INPUT.length,
  });
  expect(existsSync(join(agent!.work, "cache", "objects", DIGEST))).toBe(true);
  const another = await submitWithInput({ command: CHECK });
  expect((await waitForJobEnd(server!, another)).state).toBe("succeeded");
  const after = await waitFor("the second job counted", async () => {
    const counters = await hostCacheCounters(server!, "c1");
    return counters && counters.hits === 4 ? counters : null;
  });
  expect(after).toMatchObject({ misses: 1, fetched: INPUT.length, saved: 4 * INPUT.length });
});
