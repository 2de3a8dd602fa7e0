// Jobs run in place on a shared folder, with a real server and agents on loopback. A job whose
// workdir no host shares waits, `steward explain` naming the folder, and runs once an agent with
// `--shared` holding it joins (an agent without it never takes it): in that folder, reading what is
// there and writing its results there, with nothing uploaded at submit or collected after (the
// blob store holds its logs and no input or output). `steward hosts` and the API show the shared
// folders. A workdir in no shared folder, relative or with `..`, or with inputs beside it, is
// refused at submit naming the field; one that is not there fails the attempt naming it, and the
// agent makes no folder.

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Host } from "../../src/common/api/hosts.ts";
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

const shared = tempDir("steward-shared-folder-");
const elsewhere = tempDir("steward-not-shared-");
let server: StewardProcess & { joinToken: string };
const agents: AgentProcess[] = [];

beforeAll(async () => {
  server = await startServerProcess();
});

afterAll(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(shared, elsewhere, server?.data ?? "", ...agents.map((agent) => agent.work));
});

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

/** POST /api/v1/jobs, answering its status and body (a refusal is an answer here). */
async function post(body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function start(name: string, args: string[] = []): Promise<void> {
  agents.push(
    await startAgentProcess({ name, slots: 2, servers: [server.url], joinToken: server.joinToken, args }),
  );
  await waitFor(`${name} connected`, async () =>
    ((await api(server, "GET", "/api/v1/hosts")) as Host[]).some(
      (host) => host.name === name && host.connected,
    ),
  );
}

describe("a job run in place", () => {
  const run = join(shared, "cfd", "run 1");
  let id: string;

  it("waits while no host shares its folder, explain naming the folder", async () => {
    mkdirSync(run, { recursive: true });
    writeFileSync(join(run, "mesh"), "42\n");
    const submitted = await post({
      name: "in-place",
      command: 'pwd > where; echo "$PWD" >> where; read n < mesh; echo $((n * 2)) > residual; echo computed',
      workdir: run,
    });
    expect(submitted.status).toBe(201);
    id = submitted.body.id as string;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await getJob(server, id)).state).toBe("pending");
    const explained = await cli(server, ["explain", id]);
    expect(explained.stdout).toContain(
      `its workdir ${run} is in no folder a host shares (no host shares a folder): it waits for a host that shares one holding it (an agent's --shared)`,
    );
  });

  it("is not taken by a host that does not share its folder", async () => {
    await start("plain");
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await getJob(server, id)).state).toBe("pending");
    const explained = await cli(server, ["explain", id]);
    expect(explained.stdout).toContain(
      `workdir ${run} is in no folder this host shares (it shares no folder)`,
    );
  });

  it("runs in the folder on a host that shares it: reads and writes there, nothing uploaded or collected", async () => {
    await start("nfs", ["--shared", `${shared}/`, "--shared", elsewhere]);
    const job = await waitForJobEnd(server, id, 30_000);
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].attempts.map((attempt) => attempt.host)).toEqual(["nfs"]);
    // Its working folder was the workdir (pwd and $PWD), and what it wrote is there.
    expect(readFileSync(join(run, "where"), "utf8")).toBe(`${run}\n${run}\n`);
    expect(readFileSync(join(run, "residual"), "utf8")).toBe("84\n");
    // Nothing went through the server but its log: no input, no output.
    expect(job.spec.inputs).toEqual([]);
    expect(job.spec.outputs).toEqual([]);
    expect(await api(server, "GET", `/api/v1/jobs/${id}/outputs`)).toEqual([]);
    expect((await cli(server, ["logs", id])).stdout).toBe("computed\n");
    const stored = filesUnder(join(server.data, "blobs", "jobs", id));
    expect(stored).toEqual(["tasks/0/attempts/1/stdout"]);
  });

  it("steward hosts and the API show each host's shared folders", async () => {
    const hosts = (await api(server, "GET", "/api/v1/hosts")) as Host[];
    const nfs = hosts.find((host) => host.name === "nfs");
    expect(nfs?.facts.shared).toEqual([shared, elsewhere]);
    expect(hosts.find((host) => host.name === "plain")?.facts.shared).toEqual([]);
    const listed = (await cli(server, ["hosts"])).stdout.split("\n");
    expect(listed[0]).toMatch(/ SPEED {2}SHARED$/);
    expect(listed.find((line) => line.startsWith("nfs "))).toMatch(new RegExp(` ${shared},${elsewhere}$`));
    expect(listed.find((line) => line.startsWith("plain "))).toMatch(/ -$/);
  });

  it("with host.shared in its requirements, as any fact", async () => {
    const submitted = await post({
      command: "pwd",
      workdir: run,
      requirements: `${JSON.stringify(shared)} in host.shared`,
    });
    expect(submitted.status).toBe(201);
    const job = await waitForJobEnd(server, submitted.body.id as string, 30_000);
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].attempts[0].host).toBe("nfs");
  });
});

// From here on, the host nfs shares folders (started above).
describe("at submit", () => {
  it.each<[string, Record<string, unknown>, string, string]>([
    [
      "a workdir in no folder a host shares (hosts share some)",
      { workdir: "/srv/steward-no-such-share/run1" },
      "workdir",
      "is in no folder the hosts share (they share ",
    ],
    ["a relative workdir", { workdir: "cfd/run1" }, "workdir", "must be an absolute path"],
    ["a workdir with ..", { workdir: `${shared}/../etc` }, "workdir", "must not contain .."],
    ["inputs beside a workdir", { workdir: shared, inputs: ["mesh"] }, "inputs", "uploads nothing"],
    ["outputs beside a workdir", { workdir: shared, outputs: ["residual"] }, "outputs", "collects nothing"],
  ])("refuses %s, naming the field", async (_, fields, field, message) => {
    const before = ((await api(server, "GET", "/api/v1/jobs")) as unknown[]).length;
    const refused = await post({ command: "true", ...fields });
    expect(refused.status).toBe(400);
    const error = refused.body.error as { field: string; message: string };
    expect(error.field).toBe(field);
    expect(error.message).toContain(message);
    expect(((await api(server, "GET", "/api/v1/jobs")) as unknown[]).length).toBe(before);
  });

  it("steward submit names the field and its line", async () => {
    const dir = tempDir("steward-shared-job-");
    try {
      writeFileSync(join(dir, "job.yaml"), "command: ./cfd\nworkdir: /srv/steward-no-such-share/run1\n");
      const result = await cli(server, ["submit", "job.yaml"], { cwd: dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        "steward: job.yaml: line 2, column 1: workdir: /srv/steward-no-such-share/run1 is in no folder the hosts share (they share ",
      );
    } finally {
      cleanup(dir);
    }
  });
});

describe("a workdir that is not there", () => {
  it("fails the attempt naming the folder; the agent makes none", async () => {
    const missing = join(shared, "never-made");
    const submitted = await post({ command: "true", workdir: missing });
    expect(submitted.status).toBe(201);
    const job = await waitForJobEnd(server, submitted.body.id as string, 30_000);
    expect(job.state).toBe("failed");
    const [attempt] = job.tasks[0].attempts;
    expect(attempt.outcome).toBe("failed");
    expect(attempt.reason).toMatch(
      new RegExp(`^working folder ${missing}: no such folder for uid \\d+ \\(the agent's account\\)`),
    );
    expect(existsSync(missing)).toBe(false);
  });
});
