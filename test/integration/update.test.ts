// `steward update` with real processes: a server and agents of one slot on loopback. A job held
// back by requirements that match no host is updated to match one and runs there; a priority
// raised puts a job first among its owner's queued jobs; a running job is refused naming its state
// (the CLI exits non-zero and prints it); another user's job answers as absent, an admin may update
// it; and an update answered before a kill -9 of the server is what the restarted server places by.

import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  cli,
  getJob,
  type StewardProcess,
  startAttachedAgent,
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
let gate: string;
const submitted: string[] = [];

async function submit(as: { url: string; token: string }, spec: Record<string, unknown>): Promise<string> {
  const { id } = (await api(as, "POST", "/api/v1/jobs", spec)) as { id: string };
  submitted.push(id);
  return id;
}

beforeAll(async () => {
  cluster = await startUsersCluster(["ux", "uy"], 1, "steward-update-gate-");
  ({ server, alice, bob, folder: gate } = cluster);
}, 60_000);

afterAll(async () => {
  await cluster?.stop(submitted);
});

describe("steward update", () => {
  it("places a job held back by requirements that match no host on the host they name once updated", async () => {
    const id = await submit(alice, { command: "true", requirements: 'host.name == "nowhere"' });
    const explained = await cli(alice, ["explain", id]);
    expect(explained.stdout).toContain("0 hosts match the requirements");

    const result = await cli(alice, ["update", id, "--requirements", 'host.name == "uy"']);
    expect(result.code, result.stderr).toBe(0);
    // Pending, or running already: the pass the update asks for may come before the answer.
    expect(result.stdout).toMatch(
      new RegExp(`^job ${id} \\((pending|running)\\): requirements host\\.name == "uy"\n$`),
    );

    const job = await waitForJobEnd(server, id);
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].attempts.map((attempt) => attempt.host)).toEqual(["uy"]);
    expect(job.spec.requirements).toBe('host.name == "uy"');
    const shown = await cli(alice, ["show", id]);
    expect(shown.stdout).toMatch(
      /updated +updated by alice: requirements host\.name == "nowhere" -> host\.name == "uy"/,
    );
  });

  it("starts a job whose priority was raised first among its owner's queued jobs, and refuses the running one", async () => {
    const open = join(gate, "open");
    const onUx = 'host.name == "ux"';
    const blocker = await submit(alice, {
      command: `while [ ! -e ${open} ]; do sleep 0.1; done`,
      requirements: onUx,
    });
    await waitFor("the blocker running", async () => (await getJob(server, blocker)).state === "running");
    const queued: string[] = [];
    for (const name of ["first", "second", "third"])
      queued.push(await submit(alice, { name, command: "true", requirements: onUx }));

    // The running job is refused, naming its state; the CLI prints it and exits non-zero.
    const refused = await cli(alice, ["update", blocker, "--priority", "9"]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(
      `job ${blocker} is running: only a job that has not started can be updated`,
    );
    expect(refused.stdout).toBe("");
    const answer = await api(alice, "PATCH", `/api/v1/jobs/${blocker}`, { priority: 9 }).catch(
      (error) => error,
    );
    expect(answer.status).toBe(409);
    expect((await getJob(server, blocker)).priority).toBe(0);

    const raised = await cli(alice, ["update", queued[2], "--priority", "5", "--json"]);
    expect(raised.code, raised.stderr).toBe(0);
    expect(JSON.parse(raised.stdout)).toMatchObject({ id: queued[2], priority: 5, state: "pending" });

    writeFileSync(open, "");
    const ended = await Promise.all(queued.map((id) => waitForJobEnd(server, id)));
    const startedAt = ended.map((job) => Date.parse(job.tasks[0].attempts[0].startedAt));
    // One slot on ux: the jobs ran one after another, the raised one first.
    expect(startedAt[2]).toBeLessThan(startedAt[0]);
    expect(startedAt[0]).toBeLessThan(startedAt[1]);
    rmSync(open);
  });

  it("answers another user's job as absent, lets an admin update it, and refuses a bad expression as submit does", async () => {
    const id = await submit(alice, { command: "true", requirements: 'host.name == "nowhere"' });
    const other = await cli(bob, ["update", id, "--priority", "3"]);
    expect(other.code).toBe(3);
    expect(other.stderr).toContain(`no job ${id}`);
    const absent = await api(bob, "PATCH", `/api/v1/jobs/${id}`, { priority: 3 }).catch((error) => error);
    expect(absent.status).toBe(404);

    const bad = 'host.nme == "x"';
    const submitted = await api(alice, "POST", "/api/v1/jobs?dryRun=1", {
      command: "true",
      requirements: bad,
    }).catch((error) => error);
    const updated = await api(alice, "PATCH", `/api/v1/jobs/${id}`, { requirements: bad }).catch(
      (error) => error,
    );
    expect(updated.status).toBe(400);
    expect(submitted.status).toBe(400);
    expect(updated.body).toEqual(submitted.body);
    const printed = await cli(alice, ["update", id, "--requirements", bad]);
    expect(printed.code).toBe(3);
    expect(printed.stderr).toContain(submitted.body.error.message);

    const byAdmin = await cli(server, ["update", id, "--priority", "2"]);
    expect(byAdmin.code, byAdmin.stderr).toBe(0);
    const job = await getJob(server, id);
    expect(job.priority).toBe(2);
    expect(job.events.at(-1)?.message).toBe("updated by admin: priority 0 -> 2");
  });

  it("keeps an update across a kill -9 of the server: the restarted server places the job by it", async () => {
    const id = await submit(alice, { command: "true", requirements: 'host.name == "nowhere"' });
    const result = await cli(alice, ["update", id, "--requirements", 'host.name == "uz"', "--priority", "4"]);
    expect(result.code, result.stderr).toBe(0);
    await server.kill9();
    server = cluster.server = await startServerProcess({ data: server.data, port: server.port });
    alice = { url: server.url, token: alice.token };
    const recovered = await getJob(server, id);
    expect(recovered).toMatchObject({ state: "pending", priority: 4 });
    expect(recovered.spec.requirements).toBe('host.name == "uz"');
    // A host of that name joins: the job goes there.
    cluster.agents.push(await startAttachedAgent(server, "uz", 1));
    const job = await waitForJobEnd(server, id);
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].attempts.map((attempt) => attempt.host)).toEqual(["uz"]);
  }, 60_000);
});
