// Issue 22, item 10: which local accounts an agent run as root runs jobs as. A job owner mapped
// (--run-as-owner) to a system account (uid below UID_MIN of /etc/login.defs: daemon, an account
// made with `useradd -r`) or to an account with root's group among its supplementary groups is
// refused: the attempt fails, naming the account, its uid and the limit, and nothing of the job
// runs. `--run-as USER` refuses such an account at start. `--run-as-min-uid N` moves the limit.
// Needs root, useradd and setpriv: without them the file fails under CI and skips elsewhere.

import { execFile } from "node:child_process";
import { chmodSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeRunAs, makeAccount, removeAccount, submitAs, uidOf } from "../helpers/local-accounts.ts";
import {
  cleanup,
  getJob,
  STEWARD,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

// Accounts of this file's own: the run-as tests of other files make and remove theirs.
const SYSTEM = "stwsysacct1";
const ROOT_GROUP = "stwrootgrp1";

/** The limit as this machine's /etc/login.defs sets it, in the words of a refusal. */
function systemLimit(): string {
  const text = existsSync("/etc/login.defs") ? readFileSync("/etc/login.defs", "utf8") : "";
  const found = [...text.matchAll(/^\s*UID_MIN\s+(\d+)\s*$/gm)].at(-1);
  return found
    ? `uid ${Number(found[1])} (UID_MIN in /etc/login.defs; --run-as-min-uid N to change)`
    : "uid 1000 (the default: no UID_MIN read from /etc/login.defs; --run-as-min-uid N to change)";
}

function refusal(owner: string, why: string): string {
  return `the job's owner "${owner}" maps to a local account this agent never runs jobs as: ${why}`;
}

/** `steward agent ARGS` that should stop at start: its exit code and stderr, or code null if it ran on. */
function agentStart(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done) => {
    execFile(
      STEWARD,
      ["agent", ...args],
      { timeout: 15_000, killSignal: "SIGKILL" },
      (error, _out, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        done({ code, stderr });
      },
    );
  });
}

describeRunAs("the run-as account tests", "accounts an agent run as root never runs jobs as", () => {
  let server: StewardProcess & { joinToken: string };
  let systemUid: number;
  let rootGroupUid: number;
  // 1 on Debian, 2 on Red Hat.
  const daemonUid = uidOf("daemon");
  const dir = tempDir("steward-run-as-accounts-");
  // Passable by all: a job that did run, as whatever account, would leave its marker here.
  chmodSync(dir, 0o777);

  beforeAll(async () => {
    systemUid = makeAccount(SYSTEM, ["--system"]);
    rootGroupUid = makeAccount(ROOT_GROUP, ["--groups", "root"]);
    server = await startServerProcess();
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    removeAccount(SYSTEM);
    removeAccount(ROOT_GROUP);
    cleanup(dir, server?.data ?? "");
  });

  /** Runs a job of each owner on an agent with `args`; answers each job as it ended, and whether it ran. */
  async function runOn(args: string[], owners: string[]) {
    const name = `accounts-${owners.length}-${args.length}`;
    const agent = await startAgentProcess({
      name,
      slots: 4,
      servers: [server.url],
      joinToken: server.joinToken,
      args: ["--run-as-owner", ...args],
    });
    try {
      await waitFor("the agent to say whom jobs run as", () =>
        agent.output().includes("jobs run as the local account named like their owner"),
      );
      const ids = await Promise.all(
        owners.map((owner) =>
          submitAs(server, owner, {
            command: `id -un > ${join(dir, owner)}`,
            // On this agent alone: an earlier test's may not be known gone yet.
            requirements: `host.name == "${name}"`,
            retry: { maxAttempts: 1 },
          }),
        ),
      );
      const jobs = await Promise.all(ids.map((id) => waitForJobEnd(server, id)));
      return owners.map((owner, index) => ({
        state: jobs[index].state,
        reason: jobs[index].tasks[0].attempts[0]?.reason ?? null,
        ran: existsSync(join(dir, owner)),
      }));
    } finally {
      await agent.crash();
      cleanup(agent.work);
    }
  }

  it("--run-as-owner refuses a system account (daemon, one made by useradd -r) and one in root's group", async () => {
    expect(systemUid).toBeLessThan(1000);
    expect(daemonUid).toBeLessThan(100);
    const [daemon, system, rootGroup] = await runOn([], ["daemon", SYSTEM, ROOT_GROUP]);
    expect(daemon).toEqual({
      state: "failed",
      reason: refusal("daemon", `daemon (uid ${daemonUid}) is a system account, below ${systemLimit()}`),
      ran: false,
    });
    expect(system).toEqual({
      state: "failed",
      reason: refusal(SYSTEM, `${SYSTEM} (uid ${systemUid}) is a system account, below ${systemLimit()}`),
      ran: false,
    });
    expect(rootGroup).toEqual({
      state: "failed",
      reason: refusal(
        ROOT_GROUP,
        `${ROOT_GROUP} (uid ${rootGroupUid}) has root's group (gid 0) among its groups`,
      ),
      ran: false,
    });
  });

  it("--run-as-min-uid moves the limit: the system account's job runs, daemon's still does not", async () => {
    const [daemon, system] = await runOn(["--run-as-min-uid", String(systemUid)], ["daemon", SYSTEM]);
    expect(daemon).toEqual({
      state: "failed",
      reason: refusal(
        "daemon",
        `daemon (uid ${daemonUid}) is a system account, below uid ${systemUid} (--run-as-min-uid)`,
      ),
      ran: false,
    });
    expect(system).toEqual({ state: "succeeded", reason: null, ran: true });
    expect(readFileSync(join(dir, SYSTEM), "utf8")).toBe(`${SYSTEM}\n`);
  });

  it("--run-as refuses a system account or one in root's group at start, unless --run-as-min-uid allows it", async () => {
    const base = [
      ...["--server", server.url, "--token", server.joinToken],
      ...["--name", "refused", "--work", join(dir, "refused-work")],
    ];
    expect(await agentStart([...base, "--run-as", SYSTEM])).toEqual({
      code: 2,
      stderr: `steward: --run-as ${SYSTEM}: ${SYSTEM} (uid ${systemUid}) is a system account, below ${systemLimit()}\n`,
    });
    expect(await agentStart([...base, "--run-as", "daemon", "--run-as-min-uid", String(systemUid)])).toEqual({
      code: 2,
      stderr: `steward: --run-as daemon: daemon (uid ${daemonUid}) is a system account, below uid ${systemUid} (--run-as-min-uid)\n`,
    });
    expect(await agentStart([...base, "--run-as", ROOT_GROUP])).toEqual({
      code: 2,
      stderr: `steward: --run-as ${ROOT_GROUP}: ${ROOT_GROUP} (uid ${rootGroupUid}) has root's group (gid 0) among its groups\n`,
    });
    const allowed = await startAgentProcess({
      name: "allowed",
      servers: [server.url],
      joinToken: server.joinToken,
      args: ["--run-as", SYSTEM, "--run-as-min-uid", String(systemUid)],
    });
    try {
      await waitFor("the agent to say whom jobs run as", () =>
        allowed.output().includes(`jobs run as ${SYSTEM} (uid ${systemUid}): --run-as`),
      );
      const id = await submitAs(server, "anyone", {
        command: "id -un",
        requirements: 'host.name == "allowed"',
      });
      expect((await waitForJobEnd(server, id)).state).toBe("succeeded");
      expect((await getJob(server, id)).tasks[0].attempts[0].host).toBe("allowed");
    } finally {
      await allowed.crash();
      cleanup(allowed.work);
    }
  });
});
