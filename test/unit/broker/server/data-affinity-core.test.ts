// Data affinity through the core: what a heartbeat says the host's cache holds is kept (in memory)
// and read by the next pass, which starts a job on the host holding its input (a URL input's
// sha256, an uploaded input's digest kept with the job); explain names those hosts; a host whose
// agent detached holds nothing until its next heartbeat says so; a restart keeps the jobs' digests
// (they are in the store) and none of what the caches held.

import { afterEach, beforeEach, expect, it } from "vitest";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { AGENT_TRANSFERS } from "../../../../src/common/model/transfers.ts";
import { CACHE_HELD_MAX, heartbeatMessage } from "../../../../src/common/protocol/messages.ts";
import { facts, Harness, hello, settle } from "../../../helpers/core-harness.ts";

const A = "a".repeat(64);
const B = "b".repeat(64);

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(() => harness.close());

/** Submits a job with these inputs (uploaded ones' digests by path) as the API would; its id. */
async function submit(
  spec: unknown,
  inputs: string[] = [],
  inputDigests?: Record<string, string>,
): Promise<string> {
  const { job } = await harness.core.jobs.submit(
    { owner: "ann", submitKey: null, dependencyOwner: null },
    async () => ({
      spec: validateJobSpec(spec),
      inputs,
      ...(inputDigests ? { inputDigests } : {}),
    }),
  );
  return job.record.id;
}

/** The host each of the job's tasks was started on. */
function startedOn(id: string): string[] {
  return harness
    .starts()
    .filter((start) => start.jobId === id)
    .map((start) => start.host);
}

it("starts a job on the host whose cache holds its input, by URL digest or uploaded digest", async () => {
  const { core } = harness;
  for (const name of ["h1", "h2", "h3"]) await core.agents.attachHost(hello(name, [], 4));
  // Agents of this release: they fetch URL inputs (the transfers fact).
  const current = (name: string) => ({ ...facts(name), transfers: [...AGENT_TRANSFERS] });
  await core.heartbeat("h1", current("h1"), [], [], undefined, []);
  await core.heartbeat("h2", current("h2"), [], [], undefined, [{ sha256: A, bytes: 1000 }]);
  await core.heartbeat("h3", current("h3"), [], [], undefined, [{ sha256: B, bytes: 500 }]);
  const byUrl = await submit({ command: "x", inputs: [{ url: "https://data.example.org/a", sha256: A }] });
  await settle();
  expect(startedOn(byUrl)).toStrictEqual(["h2"]);
  const uploaded = await submit({ command: "x", inputs: ["in.dat"] }, ["in.dat"], { "in.dat": B });
  await settle();
  expect(startedOn(uploaded)).toStrictEqual(["h3"]);
  // Without digests, the usual order: the most free slots, then the name.
  const plain = await submit({ command: "x" });
  await settle();
  expect(startedOn(plain)).toStrictEqual(["h1"]);

  const explained = (await core.read.explain(uploaded)).data;
  expect(explained).toMatchObject({ inputs: 1, hosts: [{ host: "h3", bytes: 500 }] });
  expect(explained?.line).toContain("h3 500 bytes");
  expect((await core.read.explain(plain)).data).toBeNull();
});

it("forgets what a host's cache holds when its agent detaches, until its next heartbeat", async () => {
  const { core } = harness;
  await core.agents.attachHost(hello("h1", [], 1));
  await core.heartbeat("h1", facts("h1"), [], [], undefined, [{ sha256: A, bytes: 1000 }]);
  // A job that stays pending (its requirements hold nowhere), explained.
  const id = await submit({
    command: "x",
    requirements: 'host.name == "none"',
    inputs: [{ url: "https://d.example/a", sha256: A }],
  });
  expect((await core.read.explain(id)).data?.hosts).toStrictEqual([{ host: "h1", bytes: 1000 }]);
  core.detachHost("h1");
  expect((await core.read.explain(id)).data).toMatchObject({ inputs: 1, hosts: [] });
  expect((await core.read.explain(id)).data?.line).toBe(
    "data affinity: no host's cache holds its 1 input known by digest",
  );
  // A heartbeat without `cacheHeld` says nothing new: still none.
  await core.heartbeat("h1", facts("h1"));
  expect((await core.read.explain(id)).data?.hosts).toStrictEqual([]);
  await core.heartbeat("h1", facts("h1"), [], [], undefined, [{ sha256: A, bytes: 1000 }]);
  expect((await core.read.explain(id)).data?.hosts).toStrictEqual([{ host: "h1", bytes: 1000 }]);
});

it("keeps the jobs' digests across a restart, and none of what the caches held", async () => {
  await harness.core.agents.attachHost(hello("h1", [], 1));
  await harness.core.heartbeat("h1", facts("h1"), [], [], undefined, [{ sha256: B, bytes: 7 }]);
  const id = await submit(
    { command: "x", requirements: 'host.name == "none"', inputs: ["in.dat"] },
    ["in.dat"],
    {
      "in.dat": B,
    },
  );
  const core = await harness.restart();
  expect(core.read.findJob(id)?.record.inputDigests).toStrictEqual({ "in.dat": B });
  expect((await core.read.explain(id)).data).toMatchObject({ inputs: 1, hosts: [] });
});

it("takes a heartbeat's cacheHeld of at most CACHE_HELD_MAX well-formed digests, and an agent's heartbeat without one", () => {
  const heartbeat = { type: "heartbeat", facts: facts("h1") };
  const held = (count: number, sha256 = A) => Array.from({ length: count }, () => ({ sha256, bytes: 1 }));
  expect(heartbeatMessage.safeParse(heartbeat).success).toBe(true);
  expect(heartbeatMessage.safeParse({ ...heartbeat, cacheHeld: held(CACHE_HELD_MAX) }).success).toBe(true);
  expect(heartbeatMessage.safeParse({ ...heartbeat, cacheHeld: held(CACHE_HELD_MAX + 1) }).success).toBe(
    false,
  );
  expect(heartbeatMessage.safeParse({ ...heartbeat, cacheHeld: held(1, A.toUpperCase()) }).success).toBe(
    false,
  );
  expect(heartbeatMessage.safeParse({ ...heartbeat, cacheHeld: [{ sha256: A, bytes: -1 }] }).success).toBe(
    false,
  );
  expect(CACHE_HELD_MAX).toBe(256);
});
