// A full disk, on small file systems the test mounts (tmpfs, 48 MiB): the broker's SQLite store and
// blob folder filled up refuse writes with 507 naming the path while reads go on, nothing
// acknowledged is lost, an output finished meanwhile waits on its agent, the store stays sound, and
// writes are taken again once space is freed; a broker restarted on the full disk comes up; an
// agent whose work folder is full takes no new work, says so (host.diskFull, explain), and takes it
// again once space is freed. Root only: fails under CI without it, skipped elsewhere.

import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { Host } from "../../src/common/api/hosts.ts";
import { describeSmallFilesystem, SmallFilesystem } from "../helpers/small-filesystem.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let disk: SmallFilesystem;
let servers: StewardProcess[] = [];
let agents: AgentProcess[] = [];
let dirs: string[] = [];

/** A 507 answer's error, or null when the request was answered otherwise. */
async function refusedFull(server: StewardProcess, body: unknown) {
  try {
    await api(server, "POST", "/api/v1/jobs", body);
    return null;
  } catch (error) {
    const { status, body: answer } = error as {
      status?: number;
      body?: { error: { code: string; message: string } };
    };
    return status === 507 ? answer?.error : null;
  }
}

/** A folder on the machine's own disk, removed after the test. */
function ownDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** `steward server` on SQLite under `data` (on `port` when given: its agents' --server). */
async function startBroker(data: string, port?: number): Promise<StewardProcess & { joinToken: string }> {
  const server = await startServerProcess({ data, port, heartbeatSeconds: 1, hostTimeoutSeconds: 5 });
  servers.push(server);
  return server;
}

async function startAgent(server: StewardProcess & { joinToken: string }, name: string, work?: string) {
  const agent = await startAgentProcess({
    name,
    slots: 2,
    servers: [server.url],
    joinToken: server.joinToken,
    work: work ?? ownDir(`steward-agent-${name}-`),
  });
  agents.push(agent);
  await waitFor(`${name} attached`, async () =>
    ((await api(server, "GET", "/api/v1/hosts")) as Host[]).some(
      (host) => host.name === name && host.connected,
    ),
  );
  return agent;
}

describeSmallFilesystem("the full-disk tests", "a full disk", () => {
  beforeEach(() => {
    disk = SmallFilesystem.mount(48, "steward-full-disk-");
  });

  afterEach(async () => {
    for (const agent of agents) await agent.crash();
    for (const server of servers) await server.stop();
    agents = [];
    servers = [];
    disk.unmount();
    cleanup(...dirs);
    dirs = [];
  });

  it("the broker's store and blobs full: writes refused with 507 naming the path, reads go on, an output waits, writes come back once space is freed", async () => {
    const data = join(disk.dir, "data");
    const server = await startBroker(data);
    await startAgent(server, "a1");
    const before = await api(server, "POST", "/api/v1/jobs", {
      command: "echo before > out",
      outputs: ["out"],
    });
    expect((await waitForJobEnd(server, before.id)).state).toBe("succeeded");
    // A job that ends, with an output, while the disk is full.
    const during = await api(server, "POST", "/api/v1/jobs", {
      command: "sleep 3; echo during > out",
      outputs: ["out"],
    });
    // One that ends without an output: its end report is refused while the disk is full.
    const ends = await api(server, "POST", "/api/v1/jobs", { command: "sleep 3" });
    await waitFor("the jobs running", async () =>
      (await Promise.all([during.id, ends.id].map((id) => getJob(server, id)))).every(
        (job) => job.state === "running",
      ),
    );

    disk.fill();
    const refused = await waitFor("a submit refused with 507", () =>
      refusedFull(server, { command: "true" }),
    );
    expect(refused).toStrictEqual({
      code: "storage_full",
      message: `no space left for ${join(data, "steward.db")} (database or disk is full): writes are refused until space is freed there`,
    });
    // A submit with an input file: the blob folder is named.
    const jobDir = ownDir("steward-job-");
    writeFileSync(join(jobDir, "in.txt"), "x".repeat(100_000));
    writeFileSync(join(jobDir, "job.yaml"), "command: cat in.txt\ninputs: [in.txt]\n");
    const withInput = await cli(server, ["submit", join(jobDir, "job.yaml")]);
    expect(withInput.code).not.toBe(0);
    expect(withInput.stderr).toContain(`no space left for ${join(data, "blobs")} (no space left on device)`);
    // The broker is up and answers reads.
    expect((await api(server, "GET", "/healthz")).ok).toBe(true);
    expect((await getJob(server, before.id)).state).toBe("succeeded");
    const listed = (await api(server, "GET", "/api/v1/jobs?all=true")) as { id: string }[];
    expect(listed.map((job) => job.id)).toEqual(expect.arrayContaining([before.id, during.id]));
    // The job's end waits on its agent (its output refused 507, its report not acknowledged).
    await new Promise((resolve) => setTimeout(resolve, 5000));
    expect((await getJob(server, during.id)).state).toBe("running");
    expect((await getJob(server, ends.id)).state).toBe("running");
    expect(server.child.exitCode).toBeNull();

    disk.free();
    const after = await waitFor("a submit accepted again", async () => {
      try {
        return await api(server, "POST", "/api/v1/jobs", { command: "echo after > out", outputs: ["out"] });
      } catch {
        return null;
      }
    });
    const ended = await waitForJobEnd(server, ends.id);
    expect(ended.state).toBe("succeeded");
    expect(ended.tasks[0].attempts).toHaveLength(1);
    for (const [job, word] of [
      [before, "before"],
      [during, "during"],
      [after, "after"],
    ] as const) {
      const ended = await waitForJobEnd(server, job.id);
      expect(ended.state, `${word}: ${JSON.stringify(ended.tasks[0].attempts)}`).toBe("succeeded");
      // One attempt each: nothing ran again.
      expect(ended.tasks[0].attempts).toHaveLength(1);
      const fetched = ownDir("steward-fetch-");
      expect((await cli(server, ["fetch", job.id, "--to", fetched])).code).toBe(0);
      expect(readFileSync(join(fetched, "out"), "utf8")).toBe(`${word}\n`);
    }
    // The input job goes in now, whole.
    expect((await cli(server, ["submit", join(jobDir, "job.yaml")])).code).toBe(0);

    await server.stop();
    const db = new DatabaseSync(join(data, "steward.db"), { readOnly: true });
    try {
      const rows = db.prepare("PRAGMA integrity_check").all();
      expect(rows.map((row) => row.integrity_check)).toStrictEqual(["ok"]);
    } finally {
      db.close();
    }
  });

  it("a broker restarted on the full disk comes up: it serves reads, refuses writes, and takes them once space is freed", async () => {
    const data = join(disk.dir, "data");
    const first = await startBroker(data);
    const agent = await startAgent(first, "a1");
    const before = await api(first, "POST", "/api/v1/jobs", { command: "true" });
    expect((await waitForJobEnd(first, before.id)).state).toBe("succeeded");
    // A job that runs across the restart, on an agent that cannot attach while the disk is full.
    const across = await api(first, "POST", "/api/v1/jobs", { command: "sleep 12" });
    await waitFor("the job running", async () => (await getJob(first, across.id)).state === "running");
    disk.fill();
    await first.stop();

    const second = await startBroker(data, first.port);
    expect(second.child.exitCode).toBeNull();
    expect((await getJob(second, before.id)).state).toBe("succeeded");
    expect(
      (await waitFor("a submit refused with 507", () => refusedFull(second, { command: "true" })))?.code,
    ).toBe("storage_full");
    expect(second.output()).toContain("the store is full");
    // Longer than the host timeout (5 s): the agent knocking keeps its host from being lost.
    await new Promise((resolve) => setTimeout(resolve, 7000));

    disk.free();
    const after = await waitFor("a submit accepted again", async () => {
      try {
        return await api(second, "POST", "/api/v1/jobs", { command: "true" });
      } catch {
        return null;
      }
    });
    expect((await waitForJobEnd(second, after.id)).state).toBe("succeeded");
    const ran = await waitForJobEnd(second, across.id);
    expect(ran.state).toBe("succeeded");
    expect(ran.tasks[0].attempts).toHaveLength(1);
    expect(agent.child.exitCode).toBeNull();
  });

  it("an agent's work folder full: host.diskFull says so, no job is placed there (explain names it), and it runs once space is freed", async () => {
    const server = await startBroker(ownDir("steward-full-disk-broker-"));
    await startAgent(server, "a1", join(disk.dir, "work"));
    disk.fill();
    const host = await waitFor("the host's disk full", async () => {
      const [found] = (await api(server, "GET", "/api/v1/hosts")) as Host[];
      return found.facts.diskFull === true ? found : null;
    });
    expect(host.facts).toMatchObject({ diskFull: true, diskFreeMb: 0, diskMinFreeMb: 1 });
    expect((await cli(server, ["hosts"])).stdout).toContain("ready (disk full)");

    const job = await api(server, "POST", "/api/v1/jobs", { command: "echo ran > out", outputs: ["out"] });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect((await getJob(server, job.id)).state).toBe("pending");
    const explained = await cli(server, ["explain", job.id]);
    expect(explained.stdout).toContain(
      "host's work folder is full: 0 MB free, under the 1 MB its agent keeps free",
    );

    disk.free();
    const ended = await waitForJobEnd(server, job.id);
    expect(ended.state).toBe("succeeded");
    // Not placed and refused meanwhile: one attempt, on a host with room.
    expect(ended.tasks[0].attempts).toHaveLength(1);
  });

  it("an input that does not fit in the agent's work folder: the attempt ends lost (a system failure) naming the folder, and runs again once space is freed", async () => {
    const server = await startBroker(ownDir("steward-full-disk-broker-"));
    const work = join(disk.dir, "work");
    await startAgent(server, "a1", work);
    // Room left, more than the 1 MiB that makes the folder full, less than the input.
    disk.fill(4 * 1024 * 1024);
    const jobDir = ownDir("steward-job-");
    writeFileSync(join(jobDir, "big"), Buffer.alloc(12 * 1024 * 1024, 1));
    writeFileSync(join(jobDir, "job.yaml"), "command: wc -c < big > out\ninputs: [big]\noutputs: [out]\n");
    const submitted = await cli(server, ["submit", join(jobDir, "job.yaml")]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    const first = await waitFor("the first attempt's end", async () => {
      const attempt = (await getJob(server, id)).tasks[0].attempts[0];
      return attempt?.state === "ended" ? attempt : null;
    });
    expect(first).toMatchObject({ outcome: "lost" });
    expect(first.reason).toBe(`staging inputs failed: no space left in the work folder ${work} (ENOSPC)`);
    disk.free();
    const ended = await waitForJobEnd(server, id);
    expect(ended.state).toBe("succeeded");
    const fetched = ownDir("steward-fetch-");
    expect((await cli(server, ["fetch", id, "--to", fetched])).code).toBe(0);
    expect(readFileSync(join(fetched, "out"), "utf8").trim()).toBe(String(12 * 1024 * 1024));
  });
});
