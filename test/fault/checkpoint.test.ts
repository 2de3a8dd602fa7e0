// Checkpoint, restart and migration: a counter job (80 steps of 0.25 s, its count in the
// checkpoint folder) resumes where it was, on any host, after a host crash, a migration, or a
// hold and release.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { parse } from "yaml";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  ROOT,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const COUNTER = parse(readFileSync(join(ROOT, "examples/counter/job.yaml"), "utf8"));

let server: StewardProcess & { joinToken: string };
let agents: AgentProcess[] = [];

beforeEach(async () => {
  server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 3 });
  agents = [];
  for (const name of ["k1", "k2"]) {
    agents.push(
      await startAgentProcess({ name, slots: 2, servers: [server.url], joinToken: server.joinToken }),
    );
  }
  await waitFor("2 hosts", async () => (await api(server, "GET", "/api/v1/hosts")).length === 2);
});

afterEach(async () => {
  for (const agent of agents) await agent.crash();
  await server.stop();
  cleanup(...agents.map((agent) => agent.work), server.data);
});

async function logOf(id: string, attempt?: number): Promise<string> {
  const query = attempt ? `&attempt=${attempt}` : "";
  const response = await fetch(`${server.url}/api/v1/jobs/${id}/logs?task=0${query}`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  return response.text();
}

function lastStep(log: string): number {
  const steps = [...log.matchAll(/^step (\d+)$/gm)];
  return steps.length ? Number(steps[steps.length - 1][1]) : 0;
}

async function reachStep(id: string, step: number): Promise<number> {
  return waitFor(
    `step ${step}`,
    async () => {
      const reached = lastStep(await logOf(id));
      return reached >= step ? reached : null;
    },
    40_000,
    100,
  );
}

/** "start at N restarted=R attempt=A host=H" from an attempt's log. */
async function startLine(id: string, attempt: number) {
  const line = await waitFor(
    `attempt ${attempt} start line`,
    async () => (await logOf(id, attempt)).split("\n")[0] || null,
  );
  const match = /^start at (\d+) restarted=(\d) attempt=(\d+) host=(\S+)$/.exec(line);
  expect(match, line).not.toBeNull();
  return { from: Number(match![1]), restarted: match![2], attempt: Number(match![3]), host: match![4] };
}

async function expectCompleted(id: string) {
  const job = await waitForJobEnd(server, id, 60_000);
  expect(job.state).toBe("succeeded");
  const response = await fetch(`${server.url}/api/v1/jobs/${id}/outputs/0/result`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  expect((await response.text()).trim()).toBe("80");
  return job;
}

it("resumes a crashed host's counter on another host from its last checkpoint", async () => {
  const { id } = await api(server, "POST", "/api/v1/jobs", COUNTER);
  const first = await startLine(id, 1);
  expect(first).toMatchObject({ from: 0, restarted: "0" });
  const crashedAt = await reachStep(id, 30);
  await agents.find((agent) => agent.name === first.host)!.crash();
  const second = await startLine(id, 2);
  expect(second.restarted).toBe("1");
  expect(second.host).not.toBe(first.host);
  expect(second.from).toBeGreaterThanOrEqual(25);
  // The log the test reads lags the job by up to a second or two (8 steps) on a loaded machine.
  expect(second.from).toBeLessThanOrEqual(crashedAt + 8);
  const job = await expectCompleted(id);
  expect(job.tasks[0].attempts.map((attempt) => attempt.outcome)).toEqual(["lost", "succeeded"]);
  expect(job.events.some((event) => event.message.includes("restarts from checkpoint generation"))).toBe(
    true,
  );
  console.log(`crashed at step ${crashedAt}, resumed from step ${second.from}`);
}, 90_000);

it("migrates a running counter to another host, resuming from its checkpoint", async () => {
  const { id } = await api(server, "POST", "/api/v1/jobs", COUNTER);
  const first = await startLine(id, 1);
  const before = await reachStep(id, 12);
  const other = first.host === "k1" ? "k2" : "k1";
  const askedAt = Date.now();
  const answer = await api(server, "POST", `/api/v1/jobs/${id}/migrate`, {});
  expect(answer.id).toBe(id);
  await waitFor(
    "attempt 2 running elsewhere",
    async () => {
      const latest = (await getJob(server, id)).tasks[0].attempts[1];
      return latest?.state === "running" && latest.host === other;
    },
    5000 + COUNTER.checkpoint.graceSeconds * 1000,
    50,
  );
  console.log(`migrated in ${((Date.now() - askedAt) / 1000).toFixed(2)} s`);
  const second = await startLine(id, 2);
  expect(second).toMatchObject({ restarted: "1", host: other });
  expect(second.from).toBeGreaterThanOrEqual(before);
  const job = await expectCompleted(id);
  expect(job.tasks[0].attempts[0]).toMatchObject({ outcome: "migrated", host: first.host });
}, 90_000);

it("migrate --to names the host; an unknown host is refused", async () => {
  const { id } = await api(server, "POST", "/api/v1/jobs", COUNTER);
  const first = await startLine(id, 1);
  const refused = await api(server, "POST", `/api/v1/jobs/${id}/migrate`, { to: "nowhere" }).catch(
    (error) => error,
  );
  expect(refused.status).toBe(404);
  const other = first.host === "k1" ? "k2" : "k1";
  await reachStep(id, 4);
  await api(server, "POST", `/api/v1/jobs/${id}/migrate`, { to: other });
  const second = await startLine(id, 2);
  expect(second.host).toBe(other);
  await api(server, "POST", `/api/v1/jobs/${id}/cancel`, {});
}, 60_000);

it("hold stops the counter with its checkpoint; release resumes it", async () => {
  const { id } = await api(server, "POST", "/api/v1/jobs", COUNTER);
  await startLine(id, 1);
  const heldAt = await reachStep(id, 20);
  // The counter writes its progress (step / 80); heartbeats bring it to the server.
  const progress = await waitFor("progress", async () => {
    const task = (await api(server, "GET", `/api/v1/jobs/${id}`)).tasks[0] as {
      progress: { fraction: number } | null;
    };
    return task.progress && task.progress.fraction >= 0.2 ? task.progress.fraction : null;
  });
  expect(progress).toBeLessThanOrEqual(1);
  await api(server, "POST", `/api/v1/jobs/${id}/hold`, {});
  const held = await waitFor(
    "held",
    async () => {
      const job = await getJob(server, id);
      return job.state === "held" ? job : null;
    },
    15_000,
  );
  expect(held.tasks[0].attempts).toHaveLength(1);
  expect(held.tasks[0].attempts[0]).toMatchObject({ state: "ended", outcome: "preempted", reason: "held" });
  const checkpoint = (
    held.tasks[0] as unknown as { checkpoint: { generation: number; bytes: number } | null }
  ).checkpoint;
  expect(checkpoint?.generation).toBeGreaterThanOrEqual(1);
  // Held: nothing starts, however long it waits.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect((await getJob(server, id)).tasks[0].attempts).toHaveLength(1);
  await api(server, "POST", `/api/v1/jobs/${id}/release`, {});
  const second = await startLine(id, 2);
  expect(second.restarted).toBe("1");
  expect(second.from).toBeGreaterThanOrEqual(heldAt - 1);
  await expectCompleted(id);
  // rm removes the job with its files and checkpoints.
  const folder = join(server.data, "blobs", "jobs", id);
  expect(existsSync(folder)).toBe(true);
  await api(server, "DELETE", `/api/v1/jobs/${id}`);
  expect(existsSync(folder)).toBe(false);
}, 90_000);
