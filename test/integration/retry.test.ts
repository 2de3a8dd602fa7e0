// Retrying what failed, cancelling some tasks, and dependency kinds, with real processes: a server
// and two agents on loopback. A 10-task array whose tasks 2, 5 and 7 fail once (a marker file lets
// them pass the second time) is retried with `steward retry --failed`: exactly those three run again
// (the attempt records say so, the first attempts' logs stay), the answer survives a kill -9 of the
// server, and the job ends succeeded. `when: ended` runs a cleanup after a failed job, `when: failed`
// runs only after a failure and is cancelled naming the dependency after a success; `tasks: same`
// starts task i of one array right after task i of the other, before that one has ended; `cancel
// --tasks` cancels just those tasks; another user's job answers as absent.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  cli,
  getJob,
  type JobJson,
  type StewardProcess,
  startServerProcess,
  startUsersCluster,
  type UsersCluster,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let cluster: UsersCluster;
let alice: { url: string; token: string };
let bob: { url: string; token: string };
let markers: string;
const submitted: string[] = [];

async function submit(spec: Record<string, unknown>, as = alice): Promise<string> {
  const { id } = (await api(as, "POST", "/api/v1/jobs", spec)) as { id: string };
  submitted.push(id);
  return id;
}

const attemptsPerTask = (job: JobJson) => job.tasks.map((task) => task.attempts.length);
const messages = (job: JobJson) => job.events.map((event) => event.message);

beforeAll(async () => {
  cluster = await startUsersCluster(["ra", "rb"], 4, "steward-retry-markers-");
  ({ server, alice, bob, folder: markers } = cluster);
}, 60_000);

afterAll(async () => {
  await cluster?.stop(submitted);
});

describe("steward retry", () => {
  it("reruns exactly the failed tasks of an array, keeps their first attempts, and survives a kill -9", async () => {
    // Tasks 2, 5 and 7 fail the first time (leaving a marker) and pass the second.
    const script =
      `i=$STEWARD_TASK_INDEX; m=${markers}/$i; echo "run of task $i"; ` +
      "if test $i -eq 2 -o $i -eq 5 -o $i -eq 7; then test -e $m && exit 0; touch $m; exit 1; fi";
    const id = await submit({ command: ["sh", "-c", script], array: { count: 10 } });
    const first = await waitForJobEnd(server, id);
    expect(first.state).toBe("failed");
    expect(first.counts).toMatchObject({ succeeded: 7, failed: 3 });

    expect((await cli(bob, ["retry", id])).stderr).toContain(`no job ${id}`);
    const retried = await cli(alice, ["retry", id, "--failed"]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toMatch(
      new RegExp(`^job ${id}: (pending|running|succeeded) \\(retried tasks 2, 5, 7\\)\n$`),
    );
    // Answered means durable: a kill -9 now loses nothing.
    await server.kill9();
    server = cluster.server = await startServerProcess({ data: server.data, port: server.port });
    alice = { url: server.url, token: alice.token };
    bob = { url: server.url, token: bob.token };

    const job = await waitForJobEnd(server, id);
    expect(job.state).toBe("succeeded");
    expect(attemptsPerTask(job)).toEqual([1, 1, 2, 1, 1, 2, 1, 2, 1, 1]);
    for (const index of [2, 5, 7])
      expect(job.tasks[index].attempts.map((attempt) => [attempt.number, attempt.outcome])).toEqual([
        [1, "failed"],
        [2, "succeeded"],
      ]);
    expect(messages(job)).toContain("retried by alice: tasks 2, 5, 7");
    // The first attempt's log stays beside the second's.
    const log = await fetch(`${server.url}/api/v1/jobs/${id}/logs?task=5&attempt=1`, {
      headers: { authorization: `Bearer ${alice.token}` },
    });
    expect(await log.text()).toBe("run of task 5\n");

    // Nothing left to retry: refused, naming why.
    const again = await cli(alice, ["retry", id, "--tasks", "2,3"]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`nothing to retry in job ${id}: tasks 2, 3 succeeded`);
    const bad = await cli(alice, ["retry", id, "--tasks", "9-7"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('"9-7" runs backwards (write 7-9)');
  }, 120_000);
});

describe("dependency kinds", () => {
  it("when: ended runs a cleanup after a failed job; when: failed runs after it; a bare id is cancelled naming it", async () => {
    const failing = await submit({ command: "exit 3" });
    const cleanupJob = await submit({ command: "true", dependsOn: [{ job: failing, when: "ended" }] });
    const rescue = await submit({ command: "true", dependsOn: [{ job: failing, when: "failed" }] });
    const next = await submit({ command: "true", dependsOn: [failing] });
    expect((await waitForJobEnd(server, failing)).state).toBe("failed");
    const cleaned = await waitForJobEnd(server, cleanupJob);
    expect(cleaned.state).toBe("succeeded");
    expect((await waitForJobEnd(server, rescue)).state).toBe("succeeded");
    const cancelled = await waitForJobEnd(server, next);
    expect(cancelled.state).toBe("cancelled");
    expect(attemptsPerTask(cancelled)).toEqual([0]);
    expect(messages(cancelled)).toContain(
      `cancelled: dependency ${failing} ended failed (this job waited for it to succeed)`,
    );
  }, 60_000);

  it("when: failed after a success ends cancelled naming the dependency, with no attempt", async () => {
    const fine = await submit({ command: "sleep 1" });
    const rescue = await submit({ command: "true", dependsOn: [{ job: fine, when: "failed" }] });
    const explained = await cli(alice, ["explain", rescue]);
    expect(explained.stdout).toContain(`waits for job ${fine} to fail`);
    expect((await waitForJobEnd(server, fine)).state).toBe("succeeded");
    const job = await waitForJobEnd(server, rescue);
    expect(job.state).toBe("cancelled");
    expect(attemptsPerTask(job)).toEqual([0]);
    expect(messages(job)).toContain(
      `cancelled: dependency ${fine} ended succeeded (this job waited for it to fail)`,
    );
  }, 60_000);

  it("tasks: same starts task i right after task i of the other array, before that array has ended", async () => {
    const first = await submit({
      command: ["sh", "-c", "sleep $((1 + STEWARD_TASK_INDEX * 4))"],
      array: { count: 2 },
    });
    const refused = await api(alice, "POST", "/api/v1/jobs", {
      command: "true",
      array: { count: 3 },
      dependsOn: [{ job: first, tasks: "same" }],
    }).catch((error: { status: number; body: { error: string } }) => error);
    expect(refused).toMatchObject({ status: 400 });
    expect(JSON.stringify(refused.body)).toContain(`this job has 3, job ${first} has 2`);
    const second = await submit({
      command: "true",
      array: { count: 2 },
      dependsOn: [{ job: first, tasks: "same" }],
    });
    const a = await waitForJobEnd(server, first);
    const b = await waitForJobEnd(server, second);
    expect([a.state, b.state]).toEqual(["succeeded", "succeeded"]);
    const started = (job: JobJson, index: number) => Date.parse(job.tasks[index].attempts[0].startedAt);
    const endedAt = (job: JobJson, index: number) => Date.parse(job.tasks[index].attempts[0].endedAt ?? "");
    // Task 0 of the second array started after task 0 of the first ended, and before its task 1 did.
    expect(started(b, 0)).toBeGreaterThanOrEqual(endedAt(a, 0));
    expect(started(b, 0)).toBeLessThan(endedAt(a, 1));
    expect(started(b, 1)).toBeGreaterThanOrEqual(endedAt(a, 1));
  }, 60_000);
});

describe("steward cancel --tasks", () => {
  it("cancels just the tasks named: pending ones at once, running ones stopped; the others go on", async () => {
    const id = await submit({ command: "sleep 30", array: { count: 10 } });
    await waitFor("8 tasks running", async () => (await getJob(server, id)).counts.running === 8 || null);
    const running = (await getJob(server, id)).tasks
      .filter((task) => task.state === "running")
      .map((task) => task.index);
    const pending = (await getJob(server, id)).tasks
      .filter((task) => task.state === "pending")
      .map((task) => task.index);
    const named = [running[0], running[1], pending[0]];
    expect((await cli(bob, ["cancel", id, "--tasks", named.join(",")])).stderr).toContain(`no job ${id}`);
    const result = await cli(alice, ["cancel", id, "--tasks", named.join(",")]);
    expect(result.code, result.stderr).toBe(0);
    const job = await waitFor("the tasks named cancelled", async () => {
      const now = await getJob(server, id);
      return named.every((index) => now.tasks[index].state === "cancelled") ? now : null;
    });
    for (const index of running.slice(0, 2)) expect(job.tasks[index].attempts[0].outcome).toBe("cancelled");
    expect(job.tasks[pending[0]].attempts).toEqual([]);
    expect(job.state).toBe("running");
    expect(
      job.tasks
        .filter((task) => task.state === "cancelled")
        .map((task) => task.index)
        .sort(),
    ).toEqual([...named].sort());
    const unnamed = job.tasks.filter((task) => !named.includes(task.index));
    expect(unnamed.every((task) => task.state === "running" || task.state === "pending")).toBe(true);
    await cli(alice, ["cancel", id]);
    expect((await waitForJobEnd(server, id)).state).toBe("cancelled");
  }, 60_000);
});

it("the tasks that failed once left their markers; the others none", () => {
  expect([2, 5, 7].every((index) => existsSync(join(markers, String(index))))).toBe(true);
  expect(existsSync(join(markers, "3"))).toBe(false);
});
