// Job isolation with real accounts: an agent run as root with --run-as-owner starts each job as
// the local account named like its owner, in a folder of that account's that nobody else may read;
// the job cannot read the agent's join token or other jobs' folders; an owner with no account
// fails the job with a reason naming it; --run-as USER runs every job as USER. Needs root, useradd
// and setpriv: without them the file fails under CI and skips with a message elsewhere.

import { execFileSync } from "node:child_process";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, test } from "vitest";
import { attemptDirName } from "../../src/agent/attempt.ts";
import { chooseRunAs, parsePasswdLine } from "../../src/agent/run-as.ts";
import {
  type AgentProcess,
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

const OWNER = "stwrunas1";
const OTHER = "stwrunas2";

function missing(): string | null {
  if (process.getuid?.() !== 0) return "not root";
  for (const tool of ["useradd", "userdel", "setpriv", "getent"])
    try {
      execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    } catch {
      return `no ${tool}`;
    }
  return null;
}

describe("parsePasswdLine and chooseRunAs", () => {
  it.each([
    [
      "alice:x:1001:1002:Alice:/home/alice:/bin/bash",
      { name: "alice", uid: 1001, gid: 1002, home: "/home/alice" },
    ],
    [
      "svc:x:999:999::/nonexistent:/usr/sbin/nologin",
      { name: "svc", uid: 999, gid: 999, home: "/nonexistent" },
    ],
    ["broken:x:abc:1::/:/bin/sh", null],
    ["short:x:1", null],
  ])("%s", (line, account) => expect(parsePasswdLine(line)).toEqual(account));

  it("refuses the flags without root, together, or naming no account", () => {
    expect(() => chooseRunAs({ runAsOwner: true }, 1000)).toThrow(
      "--run-as-owner needs the agent to run as root",
    );
    expect(() => chooseRunAs({ runAs: "x", runAsOwner: true }, 0)).toThrow("do not go together");
    expect(() => chooseRunAs({ runAs: "no-such-account-here" }, 0)).toThrow(
      "--run-as no-such-account-here: no such local account",
    );
    expect(chooseRunAs({}, 1000)).toEqual({ kind: "self" });
  });
});

const unavailable = missing();
if (unavailable && process.env.CI) {
  test("root, useradd and setpriv are available", () => {
    throw new Error(`the run-as tests need root, useradd and setpriv: ${unavailable}`);
  });
} else if (unavailable) {
  console.warn(`skipping the run-as tests: ${unavailable}`);
  test.skip(`run-as: ${unavailable}`, () => {});
} else {
  describe("jobs run as their owner's account", () => {
    let server: StewardProcess & { joinToken: string };
    let agent: AgentProcess;
    let tokenFile: string;
    const dir = tempDir("steward-run-as-");

    beforeAll(async () => {
      for (const name of [OWNER, OTHER]) {
        execFileSync("sh", ["-c", `userdel ${name} 2>/dev/null; true`]);
        execFileSync("useradd", [
          "--system",
          "--no-create-home",
          "--home-dir",
          "/nonexistent",
          "--shell",
          "/usr/sbin/nologin",
          name,
        ]);
      }
      server = await startServerProcess();
      tokenFile = join(dir, "join-token");
      writeFileSync(tokenFile, `${server.joinToken}\n`, { mode: 0o600 });
      agent = await startAgentProcess({
        name: "iso",
        slots: 4,
        servers: [server.url],
        joinToken: "",
        args: ["--token-file", tokenFile, "--run-as-owner"],
      });
      await waitFor(
        "the agent to say whom jobs run as",
        () => agent.output().includes("jobs run as the local account named like their owner"),
        15_000,
      );
    }, 60_000);

    afterAll(async () => {
      await agent?.crash();
      await server?.stop();
      cleanup(dir, server?.data ?? "", agent?.work ?? "");
      for (const name of [OWNER, OTHER]) execFileSync("sh", ["-c", `userdel ${name} 2>/dev/null; true`]);
    });

    /** Submits as `owner` (the admin token names the owner) and waits for the end. */
    async function runAs(owner: string, command: string) {
      const response = await fetch(`${server.url}/api/v1/jobs`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${server.token}`,
          "content-type": "application/json",
          "x-steward-user": owner,
        },
        body: JSON.stringify({ command }),
      });
      expect(response.status).toBe(201);
      const { id } = (await response.json()) as { id: string };
      return id;
    }

    it("a job runs as its owner's account, in a folder only that account may read", async () => {
      const id = await runAs(OWNER, "id -un; pwd; ls -ld .. | cut -d' ' -f1,3");
      const job = await waitForJobEnd(server, id);
      expect(job.state).toBe("succeeded");
      const log = (await cli(server, ["logs", id])).stdout.split("\n");
      expect(log[0]).toBe(OWNER);
      expect(log[2]).toBe(`drwx------ ${OWNER}`);
    });

    it("the job cannot read the agent's join token, list its work folder, or read another job's folder", async () => {
      // Another owner's job keeps a secret in its folder while the probe runs.
      const keeper = await runAs(OTHER, "echo secret > kept.txt; sleep 20");
      await waitFor(
        "the keeper to run",
        async () => (await getJob(server, keeper)).tasks[0].attempts[0]?.state === "running",
        20_000,
      );
      const keeperDir = join(agent.work, "attempts", attemptDirName(keeper, 0, 1));
      await waitFor("its file", () => existsSync(join(keeperDir, "run", "kept.txt")), 10_000);
      // What the probe must not read is there to read.
      expect(existsSync(tokenFile) && existsSync(join(agent.work, "host-credential"))).toBe(true);
      const probe = await runAs(
        OWNER,
        [
          `cat ${tokenFile} >/dev/null 2>&1 && echo TOKEN-READ || echo token-refused`,
          `cat ${join(agent.work, "host-credential")} >/dev/null 2>&1 && echo CREDENTIAL-READ || echo credential-refused`,
          `ls ${join(agent.work, "attempts")} >/dev/null 2>&1 && echo WORK-LISTED || echo work-refused`,
          `cat ${join(keeperDir, "run", "kept.txt")} >/dev/null 2>&1 && echo OTHER-READ || echo other-refused`,
        ].join("; "),
      );
      await waitForJobEnd(server, probe);
      expect((await cli(server, ["logs", probe])).stdout).toBe(
        "token-refused\ncredential-refused\nwork-refused\nother-refused\n",
      );
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      await cli(server, ["cancel", keeper]);
    });

    it("a job whose owner has no local account fails, naming the account; it never runs as root", async () => {
      const id = await runAs("nosuchstwuser", "id -un > /tmp/steward-run-as-should-not-exist");
      const job = await waitForJobEnd(server, id);
      expect(job.state).toBe("failed");
      expect(job.tasks[0].attempts[0].reason).toBe(
        'no local account "nosuchstwuser" for the job\'s owner (this agent runs jobs as their owners: --run-as-owner)',
      );
      expect(existsSync("/tmp/steward-run-as-should-not-exist")).toBe(false);
    });
  });

  describe("--run-as USER", () => {
    let server: StewardProcess & { joinToken: string };
    let agent: AgentProcess;

    beforeAll(async () => {
      execFileSync("sh", [
        "-c",
        `id ${OTHER} >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin ${OTHER}`,
      ]);
      server = await startServerProcess();
      agent = await startAgentProcess({
        name: "one",
        servers: [server.url],
        joinToken: server.joinToken,
        args: ["--run-as", OTHER],
      });
    }, 60_000);

    afterAll(async () => {
      await agent?.crash();
      await server?.stop();
      cleanup(server?.data ?? "", agent?.work ?? "");
      execFileSync("sh", ["-c", `userdel ${OTHER} 2>/dev/null; true`]);
    });

    it("runs every job as that account, whoever owns it", async () => {
      const { id } = (await (
        await fetch(`${server.url}/api/v1/jobs`, {
          method: "POST",
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
          body: JSON.stringify({ command: "id -un; echo $HOME" }),
        })
      ).json()) as { id: string };
      expect((await waitForJobEnd(server, id)).state).toBe("succeeded");
      expect((await cli(server, ["logs", id])).stdout).toBe(`${OTHER}\n/nonexistent\n`);
    });

    it("an agent run as root with neither flag warns that jobs run as root", async () => {
      const plain = await startAgentProcess({
        name: "plain",
        servers: [server.url],
        joinToken: server.joinToken,
      });
      try {
        await waitFor("the warning", () => plain.output().includes("jobs run as root"), 15_000);
      } finally {
        await plain.crash();
        cleanup(plain.work);
      }
    });
  });
}
