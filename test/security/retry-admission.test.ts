// A retry makes work queued again, so it meets a submit's admission: a job's retry and a
// workflow's retry are refused (429) when the retried tasks would take the owner past the tier's
// `maxQueuedTasks`, and (400) when the asker's token does not allow the job's tier; nothing changes
// then. A real server on loopback, no agent: jobs stay queued until cancelled, which makes them
// retryable.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { api, cleanup, cli, type StewardProcess, startServerProcess, tempDir } from "../helpers/steward.ts";

const QOS_FILE = `
tiers:
  normal: {}
  batch:
    maxQueuedTasks: 3
`;

type Handle = { url: string; token: string };
let server: StewardProcess | undefined;
let files: string | undefined;

async function start(): Promise<StewardProcess> {
  files = tempDir("steward-retry-admission-");
  const qos = join(files, "qos.yaml");
  writeFileSync(qos, QOS_FILE);
  server = await startServerProcess({ args: ["--qos", qos] });
  return server;
}

afterEach(async () => {
  await server?.stop();
  cleanup(...(server ? [server.data] : []), ...(files ? [files] : []));
  server = undefined;
  files = undefined;
});

async function userOf(s: StewardProcess, user: string, qos: string): Promise<Handle> {
  const made = await cli(s, ["token", "create", "--user", user, "--qos", qos, "--json"]);
  expect(made.code, made.stderr).toBe(0);
  return { url: s.url, token: (JSON.parse(made.stdout) as { token: string }).token };
}

/** The error an API call answers (the test fails when it succeeds). */
async function refusal(call: Promise<unknown>): Promise<{ status: number; message: string }> {
  const outcome = await call.then(
    (answer) => ({ status: 200, message: JSON.stringify(answer) }),
    (error: { status: number; message: string }) => error,
  );
  return outcome;
}

/** The owner's tasks queued: pending (no agent runs them). */
async function queued(as: Handle): Promise<number> {
  const jobs = (await api(as, "GET", "/api/v1/jobs")) as { counts: { pending: number } }[];
  return jobs.reduce((sum, job) => sum + job.counts.pending, 0);
}

describe("a retry is admitted as a submit is", () => {
  it("a job's retry past maxQueuedTasks answers 429 and leaves the job cancelled", async () => {
    const s = await start();
    const alice = await userOf(s, "alice", "batch");
    const spec = { command: "true", qos: "batch", array: { count: 3 } };
    const first = ((await api(alice, "POST", "/api/v1/jobs", spec)) as { id: string }).id;
    await api(alice, "POST", `/api/v1/jobs/${first}/cancel`, {});
    await api(alice, "POST", "/api/v1/jobs", spec);
    expect(await queued(alice)).toBe(3);

    const refused = await refusal(api(alice, "POST", `/api/v1/jobs/${first}/retry`, {}));
    expect(refused.status).toBe(429);
    expect(refused.message).toContain(
      "user alice has 3 tasks queued (not ended) in QoS batch and the limit is 3; this job adds 3",
    );
    expect(((await api(alice, "GET", `/api/v1/jobs/${first}`)) as { state: string }).state).toBe("cancelled");
    expect(await queued(alice)).toBe(3);
    // With one task of the other job cancelled, two retried would be four: one fits.
    const [second] = ((await api(alice, "GET", "/api/v1/jobs")) as { id: string; state: string }[])
      .filter((job) => job.state === "pending")
      .map((job) => job.id);
    await api(alice, "POST", `/api/v1/jobs/${second}/cancel`, { tasks: "0" });
    const some = await refusal(api(alice, "POST", `/api/v1/jobs/${first}/retry`, { tasks: "0,1" }));
    expect(some.status).toBe(429);
    expect(some.message).toContain(
      "has 2 tasks queued (not ended) in QoS batch and the limit is 3; this job adds 2",
    );
    const one = (await api(alice, "POST", `/api/v1/jobs/${first}/retry`, { tasks: "0" })) as {
      retried: number[];
    };
    expect(one.retried).toEqual([0]);
    expect(await queued(alice)).toBe(3);
  });

  it("a retry by a token that does not allow the job's tier answers 400 naming the tier", async () => {
    const s = await start();
    const batch = await userOf(s, "alice", "batch");
    const normal = await userOf(s, "alice", "normal");
    const id = (
      (await api(batch, "POST", "/api/v1/jobs", { command: "true", qos: "batch" })) as { id: string }
    ).id;
    await api(batch, "POST", `/api/v1/jobs/${id}/cancel`, {});
    const refused = await refusal(api(normal, "POST", `/api/v1/jobs/${id}/retry`, {}));
    expect(refused.status).toBe(400);
    expect(refused.message).toContain("user alice may not use QoS batch; their token allows normal");
    expect(((await api(batch, "GET", `/api/v1/jobs/${id}`)) as { state: string }).state).toBe("cancelled");
  });

  it("a workflow's retry counts all its jobs' retried tasks together: 429, nothing retried", async () => {
    const s = await start();
    const alice = await userOf(s, "alice", "batch");
    const made = (await api(alice, "POST", "/api/v1/workflows", {
      jobs: {
        a: { command: "true", qos: "batch", array: { count: 2 } },
        b: { command: "true", qos: "batch" },
      },
    })) as { workflow: string; jobs: Record<string, string> };
    await api(alice, "POST", `/api/v1/workflows/${made.workflow}/cancel`, {});
    await api(alice, "POST", "/api/v1/jobs", { command: "true", qos: "batch" });

    const refused = await refusal(api(alice, "POST", `/api/v1/workflows/${made.workflow}/retry`, {}));
    expect(refused.status).toBe(429);
    expect(refused.message).toContain("jobs.b.qos");
    expect(refused.message).toContain(
      "user alice has 3 tasks queued (not ended) in QoS batch and the limit is 3; this job adds 1",
    );
    for (const job of Object.values(made.jobs))
      expect(((await api(alice, "GET", `/api/v1/jobs/${job}`)) as { state: string }).state).toBe("cancelled");
    expect(await queued(alice)).toBe(1);
  });
});
