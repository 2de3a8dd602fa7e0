// The host's content cache with real processes: a server, an agent of four slots with the default
// cache and one of two slots with `--cache-gb 0`. An array of four tasks reading one uploaded input
// copies it to the first host once (one miss, three hits, its bytes fetched once: /metrics shows
// the agent's counters), and another job uploading the same bytes finds them in the cache (the
// server's digest is the key, not the job). On the host whose cache is off, two tasks at once each
// fetch the input from the server (two misses, no hit) and nothing is written under cache/.

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
import { submitUploading } from "../helpers/submit-uploading.ts";

const INPUT = randomBytes(1024 * 1024);
const DIGEST = createHash("sha256").update(INPUT).digest("hex");

let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;
let uncached: AgentProcess | undefined;

beforeAll(async () => {
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "c1",
    slots: 4,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  uncached = await startAgentProcess({
    name: "c0",
    slots: 2,
    servers: [server.url],
    joinToken: server.joinToken,
    args: ["--cache-gb", "0"],
  });
  await waitFor(
    "the agents connected",
    async () => (await api(server!, "GET", "/api/v1/hosts")).length === 2,
  );
});

afterAll(async () => {
  await agent?.stop();
  await uncached?.stop();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "", uncached?.work ?? "");
});

/** Submits a job with `data.bin` uploaded; its id. */
function submitWithInput(job: Record<string, unknown>): Promise<string> {
  return submitUploading(server!, job, { "data.bin": INPUT });
}

/** The first host, whose cache is on. */
const ON_C1 = 'host.name == "c1"';

/** Checks the file it was given, then waits so that the array's tasks run together. */
const CHECK = `test "$(sha256sum data.bin | cut -d' ' -f1)" = ${DIGEST} && sleep 1`;

it("copies an array's uploaded input to the host once, and finds it again for another job", async () => {
  const array = await submitWithInput({ command: CHECK, array: 4, requirements: ON_C1 });
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
  const another = await submitWithInput({ command: CHECK, requirements: ON_C1 });
  expect((await waitForJobEnd(server!, another)).state).toBe("succeeded");
  const after = await waitFor("the second job counted", async () => {
    const counters = await hostCacheCounters(server!, "c1");
    return counters && counters.hits === 4 ? counters : null;
  });
  expect(after).toMatchObject({ misses: 1, fetched: INPUT.length, saved: 4 * INPUT.length });
});

it("with --cache-gb 0 every task fetches the input from the server, and nothing stays under cache/", async () => {
  const array = await submitWithInput({ command: CHECK, array: 2, requirements: 'host.name == "c0"' });
  expect((await waitForJobEnd(server!, array)).state).toBe("succeeded");
  const counted = await waitFor("the cache-less agent's counters", async () => {
    const counters = await hostCacheCounters(server!, "c0");
    return counters && counters.hits + counters.misses === 2 ? counters : null;
  });
  expect(counted).toStrictEqual({ hits: 0, misses: 2, fetched: 2 * INPUT.length, saved: 0, held: 0 });
  expect(existsSync(join(uncached!.work, "cache"))).toBe(false);
});
