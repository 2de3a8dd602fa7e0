// URL inputs with real processes: a server, an agent of four slots, and a data server on loopback
// (node:http, ranges, ETags) that the agent fetches from itself. A job submitted by the CLI uses a
// URL input beside an uploaded one, and so do the jobs of a workflow; a transfer the data server cuts halfway is resumed with a Range request; a wrong
// sha256 fails the attempt as a system failure whose reason names the URL; an array of four tasks
// reading one URL input fetches it once (the data server's count and the host's cache counters on
// /metrics), and a URL input without a digest is revalidated (304) rather than fetched again; an
// s3: URL without a key is refused at submit, naming the field (s3: inputs: s3-data.test.ts).

import { createHash, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type FileServer, startFileServer } from "../helpers/file-server.ts";
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
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const BIG = randomBytes(2 * 1024 * 1024);
const BIG_DIGEST = createHash("sha256").update(BIG).digest("hex");

let data: FileServer;
let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;
let folder: string;

beforeAll(async () => {
  data = await startFileServer();
  folder = tempDir("steward-url-inputs-");
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "u1",
    slots: 4,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  await waitFor("the agent connected", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 1);
});

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
  await data?.close();
  cleanup(server?.data ?? "", agent?.work ?? "", folder);
});

/** Checks the file's digest in the job's working folder. */
const checks = (file: string, digest: string) => `test "$(sha256sum ${file} | cut -d' ' -f1)" = ${digest}`;

/** The host's cache counters once two heartbeats apart agree (what earlier jobs did, all counted). */
async function settledCounters() {
  const zero = { hits: 0, misses: 0, fetched: 0, saved: 0, held: 0 };
  let last = (await hostCacheCounters(server!, "u1")) ?? zero;
  return waitFor("the cache counters to settle", async () => {
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const now = (await hostCacheCounters(server!, "u1")) ?? zero;
    const settled = JSON.stringify(now) === JSON.stringify(last);
    last = now;
    return settled ? now : null;
  });
}

async function submit(job: unknown): Promise<string> {
  return ((await api(server!, "POST", "/api/v1/jobs", job)) as { id: string }).id;
}

it("fetches a URL input into the job's working folder beside an uploaded one (a job file submitted by the CLI)", async () => {
  data.files.set("/runs/grid.txt", { content: Buffer.from("the grid\n") });
  const file = join(folder, "job.yaml");
  writeFileSync(join(folder, "local.txt"), "uploaded\n");
  writeFileSync(
    file,
    [
      `command: 'test "$(cat grid.txt)" = "the grid" && test "$(cat in/copy.txt)" = "the grid" && test "$(cat local.txt)" = uploaded'`,
      "inputs:",
      "  - local.txt",
      `  - { url: "${data.url}/runs/grid.txt" }`,
      `  - { url: "${data.url}/runs/grid.txt?again=1", as: in/copy.txt }`,
      "",
    ].join("\n"),
  );
  const submitted = await cli(server!, ["submit", file]);
  expect(submitted.code, submitted.stderr).toBe(0);
  const id = submitted.stdout.trim();
  expect((await waitForJobEnd(server!, id)).state).toBe("succeeded");
  expect(data.requests.filter((each) => each.path === "/runs/grid.txt").length).toBeGreaterThanOrEqual(2);
});

it("fetches the URL inputs of a workflow's jobs (a workflow sent as JSON, nothing uploaded)", async () => {
  data.files.set("/flow.txt", { content: Buffer.from("flow\n") });
  const flow = (await api(server!, "POST", "/api/v1/workflows", {
    jobs: {
      first: { command: 'test "$(cat flow.txt)" = flow', inputs: [{ url: `${data.url}/flow.txt` }] },
      second: {
        command: 'test "$(cat f.txt)" = flow',
        inputs: [{ url: `${data.url}/flow.txt`, as: "f.txt" }],
        dependsOn: ["first"],
      },
    },
  })) as { jobs: Record<string, string> };
  for (const id of Object.values(flow.jobs))
    expect((await waitForJobEnd(server!, id)).state).toBe("succeeded");
});

it("resumes a transfer cut halfway with a Range request", async () => {
  data.files.set("/big.bin", { content: BIG, cuts: 1, cutAfter: 700_000 });
  const id = await submit({
    command: checks("big.bin", BIG_DIGEST),
    inputs: [{ url: `${data.url}/big.bin` }],
  });
  expect((await waitForJobEnd(server!, id)).state).toBe("succeeded");
  const asked = data.requests.filter((each) => each.path === "/big.bin");
  expect(asked.map((each) => each.status)).toStrictEqual([200, 206]);
  expect(asked[1].range).toMatch(/^bytes=[1-9]\d*-$/);
});

it("fails an attempt whose file has not the sha256 given, as a system failure naming the URL", async () => {
  data.files.set("/wrong.txt", { content: Buffer.from("not what was promised") });
  const promised = "0".repeat(64);
  const id = await submit({
    command: "true",
    inputs: [{ url: `${data.url}/wrong.txt?sig=secret`, sha256: promised }],
  });
  const attempt = await waitFor("the first attempt's end", async () => {
    const first = (await getJob(server!, id)).tasks[0].attempts[0];
    return first?.outcome ? first : null;
  });
  expect(attempt.outcome).toBe("lost");
  expect(attempt.reason).toBe(
    `staging inputs failed: sha256 mismatch for ${data.url}/wrong.txt: expected ${promised}, got ${createHash("sha256").update("not what was promised").digest("hex")}`,
  );
  // A system failure: the task goes round again, charged nothing of its retries.
  expect((await getJob(server!, id)).state).not.toBe("failed");
  await api(server!, "POST", `/api/v1/jobs/${id}/cancel`);
});

it("fetches an array's URL input once per host: by its digest, and by its URL revalidated", async () => {
  const content = randomBytes(512 * 1024);
  const digest = createHash("sha256").update(content).digest("hex");
  data.files.set("/shared.bin", { content, trickleBytes: 64 * 1024, trickleMs: 50 });
  const before = await settledCounters();
  const array = await submit({
    command: `${checks("shared.bin", digest)} && sleep 1`,
    inputs: [{ url: `${data.url}/shared.bin`, sha256: digest }],
    array: 4,
  });
  expect((await waitForJobEnd(server!, array)).state).toBe("succeeded");
  expect(data.requests.filter((each) => each.path === "/shared.bin")).toHaveLength(1);
  const counted = await waitFor("the array counted", async () => {
    const counters = await hostCacheCounters(server!, "u1");
    return counters && counters.hits + counters.misses - before.hits - before.misses === 4 ? counters : null;
  });
  expect(counted.misses - before.misses).toBe(1);
  expect(counted.hits - before.hits).toBe(3);
  expect(counted.fetched - before.fetched).toBe(content.length);
  expect(counted.saved - before.saved).toBe(3 * content.length);

  // Without a digest the host asks the data server whether what it holds is current.
  data.files.set("/by-url.bin", { content, trickleBytes: 64 * 1024, trickleMs: 50 });
  const again = await submit({
    command: `${checks("by-url.bin", digest)} && sleep 1`,
    inputs: [{ url: `${data.url}/by-url.bin` }],
    array: 4,
  });
  expect((await waitForJobEnd(server!, again)).state).toBe("succeeded");
  const asked = data.requests.filter((each) => each.path === "/by-url.bin").map((each) => each.status);
  expect(asked).toStrictEqual([200, 304, 304, 304]);
});

it("refuses an s3: URL without a key at submit, naming the field", async () => {
  await expect(submit({ command: "true", inputs: [{ url: "s3://bucket" }] })).rejects.toMatchObject({
    status: 400,
    body: {
      error: {
        field: "inputs[0].url",
        message: "inputs[0].url: names no key: s3://bucket/key",
      },
    },
  });
});
