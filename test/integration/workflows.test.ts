// Workflows with real processes: a server and two agents on loopback. A diamond (a -> b, c -> d)
// written as a workflow file is made at once by `steward submit` (one answer, the ids by name),
// with an input file per job uploaded; a cycle or an unknown name is refused naming it and makes
// no job at all. The jobs run in the graph's order (attempt times say so); b fails the first time
// (a marker file lets it pass the second), d is cancelled for it; `steward retry flow-ID` reruns b
// and d only, a and c keep their single attempt; `steward show flow-ID` draws the graph, and a
// job's show names its workflow; the workflow survives a restart of the server; another user's
// workflow answers as absent.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Workflow } from "../../src/common/api/workflows.ts";
import {
  api,
  cli,
  getJob,
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
let folder: string;

async function jobCount(): Promise<number> {
  return ((await api(server, "GET", "/api/v1/jobs?all=1")) as unknown[]).length;
}

beforeAll(async () => {
  cluster = await startUsersCluster(["wa", "wb"], 2, "steward-workflow-");
  ({ server, alice, bob, folder } = cluster);
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

describe("a workflow file", () => {
  it("with a cycle or an unknown name is refused naming it, and makes no job", async () => {
    const before = await jobCount();
    const cyclic = join(folder, "cycle.yaml");
    writeFileSync(
      cyclic,
      "jobs:\n  a: {command: 'true', dependsOn: [b]}\n  b: {command: 'true', dependsOn: [a]}\n  c: {command: 'true'}\n",
    );
    const cycle = await cli(alice, ["submit", cyclic]);
    expect(cycle.code).toBe(2);
    expect(cycle.stderr).toContain("cycle.yaml: line 2, column 36: jobs.a.dependsOn[0]: cycle: a -> b -> a");
    const unknown = join(folder, "unknown.yaml");
    writeFileSync(unknown, "jobs:\n  a: {command: 'true'}\n  c: {command: 'true', dependsOn: [a, x]}\n");
    const named = await cli(alice, ["submit", unknown]);
    expect(named.code).toBe(2);
    expect(named.stderr).toContain("jobs.c.dependsOn[1]: no job named x in the workflow");
    const badJob = join(folder, "bad.yaml");
    writeFileSync(badJob, "jobs:\n  a: {command: 'true'}\n  b: {command: 'true', retry: {maxAttempts: 0}}\n");
    const bad = await cli(alice, ["submit", badJob]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("jobs.b.retry.maxAttempts");
    // Sent as a job, a workflow file is refused saying where it goes.
    const asJob = await api(alice, "POST", "/api/v1/jobs", { jobs: { a: { command: "true" } } }).catch(
      (error: { status: number; message: string }) => error,
    );
    expect(asJob).toMatchObject({ status: 400 });
    expect((asJob as Error).message).toContain(
      "jobs: this is a workflow file: send it to POST /api/v1/workflows",
    );
    expect(await jobCount()).toBe(before);
    expect((await cli(alice, ["ps", "--json"])).stdout.trim()).toBe("[]");
  });

  it("checked with dryRun=1 (YAML or JSON) answers each job's file as read, or the same 400, and makes nothing", async () => {
    const before = await jobCount();
    const yaml =
      "name: dry\njobs:\n  b: {command: cat in.txt, inputs: [in.txt], dependsOn: [a]}\n  a: {command: 'true'}\n";
    const answer = await fetch(`${alice.url}/api/v1/workflows?dryRun=1`, {
      method: "POST",
      headers: { authorization: `Bearer ${alice.token}`, "content-type": "application/yaml" },
      body: yaml,
    });
    expect(answer.status).toBe(200);
    const checked = (await answer.json()) as {
      name: string;
      jobs: { name: string; spec: Record<string, unknown> }[];
    };
    expect(checked.name).toBe("dry");
    // Each job after those it waits for, its defaults filled in, its inputs named.
    expect(checked.jobs.map((job) => job.name)).toEqual(["a", "b"]);
    expect(checked.jobs[1].spec).toMatchObject({
      inputs: ["in.txt"],
      dependsOn: ["a"],
      retry: { maxAttempts: 1 },
    });
    const cyclic = await api(alice, "POST", "/api/v1/workflows?dryRun=1", {
      jobs: { a: { command: "true", dependsOn: ["b"] }, b: { command: "true", dependsOn: ["a"] } },
    }).catch((error: { status: number; message: string }) => error);
    expect(cyclic).toMatchObject({ status: 400 });
    expect((cyclic as Error).message).toContain("jobs.a.dependsOn[0]: cycle: a -> b -> a");
    expect(await jobCount()).toBe(before);
  });

  it("runs a diamond in order; after b fails, retry flow-ID reruns b and d only", async () => {
    const marker = join(folder, "b-failed-once");
    writeFileSync(join(folder, "data.txt"), "payload\n");
    // Each job records when it ran; b fails the first time (leaving the marker) and passes the second.
    const step = (name: string, extra = "") =>
      `{command: "cat data.txt >/dev/null && sleep 0.3 && ${extra} echo ${name}", inputs: [data.txt]}`;
    const file = join(folder, "diamond.yaml");
    writeFileSync(
      file,
      [
        "name: diamond",
        "jobs:",
        `  a: ${step("a")}`,
        `  b: {command: "sleep 0.3; test -e ${marker} && exit 0; touch ${marker}; exit 1", dependsOn: [a]}`,
        `  c: {command: "sleep 0.3", dependsOn: [a]}`,
        `  d: {command: "echo d", dependsOn: [b, c]}`,
        "",
      ].join("\n"),
    );
    const submitted = await cli(alice, ["submit", file, "--json"]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const created = JSON.parse(submitted.stdout) as { workflow: string; jobs: Record<string, string> };
    expect(created.workflow).toMatch(/^flow-\d+$/);
    expect(Object.keys(created.jobs)).toEqual(["a", "b", "c", "d"]);
    const { a, b, c, d } = created.jobs;
    // One commit: every job is there as soon as the answer is.
    const listed = (await api(alice, "GET", "/api/v1/jobs?all=1")) as { id: string }[];
    expect(listed.map((job) => job.id).sort()).toEqual([a, b, c, d].sort());

    const [jobA, jobB, jobC, jobD] = await Promise.all([a, b, c, d].map((id) => waitForJobEnd(alice, id)));
    expect([jobA.state, jobB.state, jobC.state, jobD.state]).toEqual([
      "succeeded",
      "failed",
      "succeeded",
      "cancelled",
    ]);
    expect(jobD.tasks[0].attempts).toEqual([]);
    // The job's state is read from memory, its history from the store: wait for the commit.
    await waitFor("d's history to name b", async () =>
      (await getJob(alice, d)).events.some((event) => event.message.includes(`dependency ${b} ended failed`)),
    );
    const aEnd = Date.parse(jobA.tasks[0].attempts[0].endedAt!);
    for (const job of [jobB, jobC])
      expect(Date.parse(job.tasks[0].attempts[0].startedAt)).toBeGreaterThanOrEqual(aEnd);
    expect(jobA.workflow).toEqual({ id: created.workflow, name: "a" });

    const shown = await cli(alice, ["show", created.workflow]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`workflow ${created.workflow}  diamond  owner alice`);
    expect(shown.stdout).toContain("state failed");
    expect(shown.stdout).toContain("a (succeeded) -> b (failed), c (succeeded)");
    expect(shown.stdout).toContain("b (failed) -> d (cancelled)");
    expect((await cli(alice, ["show", b])).stdout).toContain(`workflow ${created.workflow} (as b)`);
    expect((await cli(bob, ["show", created.workflow])).stderr).toContain(`no workflow ${created.workflow}`);
    expect((await cli(bob, ["retry", created.workflow])).stderr).toContain(`no workflow ${created.workflow}`);
    // Listed to its owner and to an admin, not to another user, whatever `user` asks.
    const workflowsSeenBy = async (who: { url: string; token: string }, query: string) =>
      ((await api(who, "GET", `/api/v1/workflows?all=1${query}`)) as { workflow: string }[]).map(
        (each) => each.workflow,
      );
    expect(await workflowsSeenBy(alice, "")).toContain(created.workflow);
    expect(await workflowsSeenBy(server, "&user=alice")).toContain(created.workflow);
    expect(await workflowsSeenBy(bob, "")).not.toContain(created.workflow);
    expect(await workflowsSeenBy(bob, "&user=alice")).not.toContain(created.workflow);

    // Answered means durable: the workflow comes back with the server.
    await server.stop();
    server = cluster.server = await startServerProcess({ data: server.data, port: server.port });
    alice = { url: server.url, token: alice.token };
    bob = { url: server.url, token: bob.token };
    await waitFor("agents back", async () => {
      const hosts = (await api(server, "GET", "/api/v1/hosts")) as { connected: boolean }[];
      return hosts.filter((host) => host.connected).length === 2;
    });

    const retried = await cli(alice, ["retry", created.workflow]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toBe(`workflow ${created.workflow}: retried b (job ${b}), d (job ${d})\n`);
    const [againB, againD] = await Promise.all([b, d].map((id) => waitForJobEnd(alice, id)));
    expect([againB.state, againD.state]).toEqual(["succeeded", "succeeded"]);
    expect(againB.tasks[0].attempts.map((attempt) => attempt.outcome)).toEqual(["failed", "succeeded"]);
    expect(againD.tasks[0].attempts.map((attempt) => attempt.outcome)).toEqual(["succeeded"]);
    expect(Date.parse(againD.tasks[0].attempts[0].startedAt)).toBeGreaterThanOrEqual(
      Date.parse(againB.tasks[0].attempts[1].endedAt!),
    );
    expect(againB.events.map((event) => event.message)).toContain(
      `retried by alice with workflow ${created.workflow}`,
    );
    for (const id of [a, c]) expect((await getJob(alice, id)).tasks[0].attempts).toHaveLength(1);

    const workflow = (await api(alice, "GET", `/api/v1/workflows/${created.workflow}`)) as Workflow;
    expect(workflow.state).toBe("succeeded");
    expect(workflow.graph.map((job) => [job.name, job.state])).toEqual([
      ["a", "succeeded"],
      ["b", "succeeded"],
      ["c", "succeeded"],
      ["d", "succeeded"],
    ]);
    const again = await cli(alice, ["retry", created.workflow]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`workflow ${created.workflow} has no failed or cancelled job to retry`);
  }, 120_000);

  it("sent again with its key (its answer lost) answers the workflow made, making no other", async () => {
    const post = async () => {
      const response = await fetch(`${server.url}/api/v1/workflows`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${bob.token}`,
          "content-type": "application/yaml",
          "idempotency-key": "flow-key-1",
        },
        body: "jobs:\n  one: {command: 'true'}\n  two: {command: 'true', dependsOn: [one]}\n",
      });
      expect(response.status).toBe(201);
      return (await response.json()) as { workflow: string; jobs: Record<string, string> };
    };
    const first = await post();
    expect(await post()).toEqual(first);
    const bobs = (await api(bob, "GET", "/api/v1/jobs?all=1")) as { id: string }[];
    expect(bobs.map((job) => job.id).sort()).toEqual(Object.values(first.jobs).sort());
  });

  it("reads a job's array.paramsFile at submit: one task per line, each with its parameter", async () => {
    writeFileSync(join(folder, "cases.txt"), "alpha\nbeta\ngamma\n");
    const file = join(folder, "sweep.yaml");
    writeFileSync(
      file,
      [
        "name: sweep",
        "jobs:",
        "  sweep: {command: 'echo \"p=$STEWARD_TASK_PARAM\"', inputs: [cases.txt], array: {paramsFile: cases.txt}}",
        "  after: {command: 'true', dependsOn: [sweep]}",
        "",
      ].join("\n"),
    );
    const submitted = await cli(alice, ["submit", file, "--json"]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const { sweep } = (JSON.parse(submitted.stdout) as { jobs: Record<string, string> }).jobs;
    const job = await waitForJobEnd(alice, sweep);
    expect(job.state).toBe("succeeded");
    expect(job.taskCount).toBe(3);
    for (const [task, line] of ["alpha", "beta", "gamma"].entries()) {
      const response = await fetch(`${server.url}/api/v1/jobs/${sweep}/logs?task=${task}`, {
        headers: { authorization: `Bearer ${alice.token}` },
      });
      expect(await response.text()).toBe(`p=${line}\n`);
    }
  }, 60_000);
});
