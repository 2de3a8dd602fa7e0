// `steward explain` with real processes (2 hosts of 1 slot): the failing clause of the
// requirements, the summary "N hosts match the requirements, M of them have room", whom a job
// waits behind in the queue, and what a running task is told.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, cleanup, cli, type StewardProcess, startUp, waitFor } from "../helpers/steward.ts";

let steward: StewardProcess;
let arch: string;
const submitted: string[] = [];

beforeAll(async () => {
  steward = await startUp({ agents: 2, slots: 1 });
  const hosts = (await api(steward, "GET", "/api/v1/hosts")) as { facts: { arch: string } }[];
  arch = hosts[0].facts.arch;
});

afterAll(async () => {
  for (const id of submitted) await api(steward, "POST", `/api/v1/jobs/${id}/cancel`, {}).catch(() => {});
  await steward?.stop();
  cleanup(steward?.data);
});

async function submit(spec: Record<string, unknown>): Promise<string> {
  const { id } = (await api(steward, "POST", "/api/v1/jobs", spec)) as { id: string };
  submitted.push(id);
  return id;
}

async function waitRunning(id: string): Promise<void> {
  await waitFor(`job ${id} running`, async () => {
    const job = (await api(steward, "GET", `/api/v1/jobs/${id}`)) as { state: string };
    return job.state === "running";
  });
}

async function explainText(id: string): Promise<string> {
  const result = await cli(steward, ["explain", id]);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

describe("steward explain", () => {
  it("names the failing clause and says no host matches", async () => {
    // The machine's own arch, so that only the memory clause fails (x86_64 here).
    const requirements = `host.arch == "${arch}" && host.memFreeMb >= 1e9`;
    const id = await submit({ command: "true", requirements });
    const text = await explainText(id);
    expect(text).toContain("0 hosts match the requirements, 0 of them have room");
    expect(text).toMatch(
      /local-1 +no +requirements: host\.memFreeMb >= 1e9 is false \(host\.memFreeMb = \d+\)/,
    );
    expect(text).toMatch(
      /local-2 +no +requirements: host\.memFreeMb >= 1e9 is false \(host\.memFreeMb = \d+\)/,
    );
    expect(text).not.toContain(`host.arch == "${arch}" is false`);
    // The summary comes before the hosts.
    expect(text.indexOf("0 hosts match")).toBeLessThan(text.indexOf("local-1"));

    const answer = JSON.parse((await cli(steward, ["explain", id, "--json"])).stdout);
    expect(answer.id).toBe(id);
    expect(answer.state).toBe("pending");
    expect(answer.reasons).toEqual([]);
    expect(answer.summary).toEqual({ matching: 0, withRoom: 0 });
    expect(
      answer.clauses.map((clause: { clause: string; matching: number }) => [clause.clause, clause.matching]),
    ).toEqual([
      [`host.arch == "${arch}"`, 2],
      ["host.memFreeMb >= 1e9", 0],
    ]);
    expect(answer.hosts.map((host: { eligible: boolean }) => host.eligible)).toEqual([false, false]);
  });

  it("counts the hosts with room, says whom a job waits behind, and what a running task is told", async () => {
    const first = await submit({ name: "sleeper-1", command: "sleep 60" });
    await waitRunning(first);
    const dependent = await submit({ command: "true", dependsOn: [first] });
    const waiting = await explainText(dependent);
    expect(waiting).toContain(`waiting for its dependency ${first} (running) to succeed`);
    expect(waiting).toContain("2 hosts match the requirements, 1 of them has room");

    const second = await submit({ name: "sleeper-2", command: "sleep 60" });
    await waitRunning(second);
    const ahead = await submit({ command: "true" });
    const behind = await submit({ command: "true" });
    const text = await explainText(behind);
    expect(text).toContain("2 hosts match the requirements, 0 of them have room");
    // The job that matches no host (the test above) and the one waiting for its dependency are not in the way.
    expect(text).toContain(`behind 1 job in the queue: ${ahead} (priority 0)`);
    expect(text).toMatch(/local-1 +yes +busy: needs 1 free slots, 0 free/);
    const answer = JSON.parse((await cli(steward, ["explain", behind, "--json"])).stdout);
    expect(answer.summary).toEqual({ matching: 2, withRoom: 0 });
    expect(answer.ahead.map((job: { id: string }) => job.id)).toEqual([ahead]);

    const running = await explainText(first);
    expect(running).toMatch(
      /task 0 \(attempt 1\) runs on local-[12]: no rescheduling estimate yet; not a preemption candidate: it has no checkpoint/,
    );
  });

  it("of an ended job says how it ended, and which dependency cancelled it, with no host table", async () => {
    // The jobs of the tests before hold the two slots.
    for (const id of submitted) await api(steward, "POST", `/api/v1/jobs/${id}/cancel`, {});
    const broken = await submit({ command: "exit 1" });
    const orphan = await submit({ command: "true", dependsOn: [broken] });
    await waitFor(`job ${orphan} cancelled`, async () => {
      const job = (await api(steward, "GET", `/api/v1/jobs/${orphan}`)) as { state: string };
      return job.state === "cancelled";
    });
    expect(await explainText(orphan)).toBe(
      `job ${orphan} is cancelled\n` +
        "  the job has ended: cancelled\n" +
        `  cancelled because its dependency can never be met: job ${broken} ended failed (it waited for it to succeed)\n`,
    );
    expect(await explainText(broken)).toBe(`job ${broken} is failed\n  the job has ended: failed\n`);
    const json = JSON.parse((await cli(steward, ["explain", orphan, "--json"])).stdout);
    expect(json).toMatchObject({ state: "cancelled", hosts: [], clauses: [], pools: [], running: [] });

    const sleeper = await submit({ command: "sleep 60" });
    await waitRunning(sleeper);
    await cli(steward, ["cancel", sleeper]);
    await waitFor(`job ${sleeper} cancelled`, async () => {
      const job = (await api(steward, "GET", `/api/v1/jobs/${sleeper}`)) as { state: string };
      return job.state === "cancelled";
    });
    expect(await explainText(sleeper)).toBe(
      `job ${sleeper} is cancelled\n  the job has ended: cancelled\n  cancel requested by admin\n`,
    );
  }, 60_000);
});
