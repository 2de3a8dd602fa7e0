// A host's life after it joined, with a real server and agents: drain and undrain (a drained host
// takes work again), drain --wait (returns once the host's tasks have ended, exit 2 on its
// timeout), and hosts rm (a connected host cannot be removed; a lost or disconnected one is
// forgotten with its host credential, so its agent must join again with a join token).

import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Host } from "../../src/common/api/hosts.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  getJob,
  hostCredentialOf,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
const agents: AgentProcess[] = [];
const scratch = tempDir("steward-lifecycle-");

async function hosts(): Promise<Host[]> {
  return (await api(server, "GET", "/api/v1/hosts")) as Host[];
}

async function host(name: string): Promise<Host | undefined> {
  return (await hosts()).find((each) => each.name === name);
}

async function agent(name: string, work?: string): Promise<AgentProcess> {
  const started = await startAgentProcess({ name, servers: [server.url], joinToken: server.joinToken, work });
  agents.push(started);
  return started;
}

async function connected(name: string): Promise<void> {
  await waitFor(`${name} to be connected`, async () => (await host(name))?.connected === true, 20_000);
}

function exited(process: AgentProcess): Promise<number | null> {
  return new Promise((done) => {
    if (process.child.exitCode !== null) return done(process.child.exitCode);
    process.child.once("exit", (code) => done(code));
  });
}

/** A job on `on` alone; its command is given. */
async function submitOn(on: string, command: string): Promise<string> {
  const made = (await api(server, "POST", "/api/v1/jobs", {
    name: `on-${on}`,
    command,
    requirements: `host.name == "${on}"`,
  })) as { id: string };
  return made.id;
}

beforeAll(async () => {
  // A lease long enough that a host whose agent died is disconnected for a while before it is lost.
  server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 6 });
  await agent("h1");
  await connected("h1");
}, 60_000);

afterAll(async () => {
  for (const each of agents) await each.crash();
  await server?.stop();
  cleanup(server?.data ?? "", scratch, ...agents.map((each) => each.work));
});

describe("drain and undrain", () => {
  it("a drained host takes no new job; undrained, it runs it; undraining a ready host answers it", async () => {
    const drained = await cli(server, ["drain", "h1"]);
    expect(drained.code, drained.stderr).toBe(0);
    expect(drained.stdout).toBe("host h1: draining\n");

    const id = await submitOn("h1", "echo ran");
    // A scheduling pass follows every submit and every heartbeat: a few of them leave it waiting.
    await new Promise((done) => setTimeout(done, 2500));
    const waiting = await getJob(server, id);
    expect(waiting.tasks[0].attempts).toEqual([]);

    const undrained = await cli(server, ["undrain", "h1", "--json"]);
    expect(undrained.code, undrained.stderr).toBe(0);
    expect((JSON.parse(undrained.stdout) as Host).state).toBe("ready");
    const job = await waitForJobEnd(server, id);
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].attempts.map((attempt) => attempt.host)).toEqual(["h1"]);

    const again = await cli(server, ["undrain", "h1"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe("host h1: ready\n");
  }, 60_000);

  it("undraining or removing a host that does not exist answers 404", async () => {
    for (const [method, path] of [
      ["POST", "/api/v1/hosts/nohost/undrain"],
      ["DELETE", "/api/v1/hosts/nohost"],
    ]) {
      const error = (await api(server, method, path).catch((caught) => caught)) as { status?: number };
      expect(error.status, `${method} ${path}`).toBe(404);
    }
  });
});

describe("drain --wait", () => {
  it("returns once the host's running task has ended, and exits 2 on its timeout before", async () => {
    const gate = join(scratch, "go");
    const id = await submitOn("h1", `while [ ! -e ${gate} ]; do sleep 0.1; done; echo done`);
    await waitFor(
      "the job to run",
      async () => (await getJob(server, id)).tasks[0].attempts[0]?.state === "running",
      30_000,
    );

    const timedOut = await cli(server, ["drain", "h1", "--wait", "--timeout", "1"]);
    expect(timedOut.code, timedOut.stderr).toBe(2);
    expect(timedOut.stdout).toBe("host h1: draining, 1 attempt(s) still running\n");

    let returned = false;
    const waiting = cli(server, ["drain", "h1", "--wait", "--json"]).then((result) => {
      returned = true;
      return result;
    });
    await new Promise((done) => setTimeout(done, 1500));
    expect(returned).toBe(false);
    writeFileSync(gate, "");
    const drained = await waiting;
    expect(drained.code, drained.stderr).toBe(0);
    const shown = JSON.parse(drained.stdout) as Host;
    expect(shown).toMatchObject({ name: "h1", state: "draining", liveAttempts: 0 });
    expect((await getJob(server, id)).state).toBe("succeeded");

    const undrained = await cli(server, ["undrain", "h1"]);
    expect(undrained.stdout).toBe("host h1: ready\n");
  }, 60_000);

  it("--timeout goes with --wait only", async () => {
    const result = await cli(server, ["drain", "h1", "--timeout", "1"]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain("--timeout goes with --wait");
  });
});

describe("hosts rm", () => {
  it("refuses a connected host: 409, drain it and stop its agent first", async () => {
    const error = (await api(server, "DELETE", "/api/v1/hosts/h1").catch((caught) => caught)) as {
      status?: number;
    };
    expect(error.status).toBe(409);
    const result = await cli(server, ["hosts", "rm", "h1"]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain("host h1 is connected: drain it and stop its agent first");
    expect((await host("h1"))?.connected).toBe(true);
  });

  it("forgets a lost host and revokes its credential: its agent comes back only with a join token", async () => {
    const h2 = await agent("h2");
    await connected("h2");
    const credential = await hostCredentialOf(h2.work);
    await h2.crash();
    await waitFor("h2 to be lost", async () => (await host("h2"))?.state === "lost", 30_000);

    const undrain = await cli(server, ["undrain", "h2"]);
    expect(undrain.code).toBe(3);
    expect(undrain.stderr).toContain("host h2 is lost");

    const removed = await cli(server, ["hosts", "rm", "h2", "--json"]);
    expect(removed.code, removed.stderr).toBe(0);
    const answer = JSON.parse(removed.stdout) as {
      name: string;
      removed: boolean;
      revokedCredentials: string[];
    };
    expect(answer).toMatchObject({ name: "h2", removed: true });
    expect(answer.revokedCredentials).toHaveLength(1);
    expect(credential).toContain(`_${answer.revokedCredentials[0]}_`);
    const listed = await cli(server, ["hosts"]);
    expect(listed.stdout).not.toContain("h2");
    expect(await host("h2")).toBeUndefined();
    const tokens = JSON.parse((await cli(server, ["token", "list", "--json"])).stdout) as {
      kind: string;
      user: string;
      state: string;
    }[];
    expect(tokens.filter((t) => t.kind === "host" && t.user === "h2").map((t) => t.state)).toEqual([
      "revoked",
    ]);

    // The same agent with its work folder presents its old credential: refused, told what to do.
    const returning = await agent("h2", h2.work);
    expect(await exited(returning)).toBe(3);
    expect(returning.output()).toContain("was revoked");
    expect(returning.output()).toContain("delete host-credential from the agent's work folder");
    expect(await host("h2")).toBeUndefined();

    // Without its old credential, the join token lets it in again, with a new one.
    rmSync(join(h2.work, "host-credential"));
    await agent("h2", h2.work);
    await connected("h2");
    await waitFor("a new credential", () => existsSync(join(h2.work, "host-credential")), 10_000, 50);
    expect(await hostCredentialOf(h2.work)).not.toBe(credential);
    expect((await host("h2"))?.state).toBe("ready");
  }, 90_000);

  it("forgets a disconnected host before it is lost: its running attempt ends lost, naming who removed it", async () => {
    const h3 = await agent("h3");
    await connected("h3");
    const id = await submitOn("h3", "sleep 600");
    await waitFor(
      "the job to run on h3",
      async () => (await getJob(server, id)).tasks[0].attempts[0]?.state === "running",
      30_000,
    );
    await h3.crash();
    await waitFor("h3 to be disconnected", async () => (await host("h3"))?.connected === false, 10_000, 50);
    const removed = (await api(server, "DELETE", "/api/v1/hosts/h3")) as { removed: boolean };
    expect(removed.removed).toBe(true);
    const job = await getJob(server, id);
    expect(job.tasks[0].attempts[0]).toMatchObject({ host: "h3", state: "ended", outcome: "lost" });
    expect(job.events.map((event) => event.message)).toContainEqual(
      expect.stringContaining("host h3 removed by admin"),
    );
    await api(server, "POST", `/api/v1/jobs/${id}/cancel`, {});
  }, 60_000);

  it("has --help on the new commands", async () => {
    for (const command of [["hosts", "rm"], ["undrain"], ["drain"]]) {
      const result = await cli(null, [...command, "--help"]);
      expect(result.code, command.join(" ")).toBe(0);
      expect(result.stdout, command.join(" ")).toContain("Usage: steward");
    }
    expect((await cli(null, ["drain", "--help"])).stdout).toContain("--wait");
  });
});
