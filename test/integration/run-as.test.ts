// Job isolation with real accounts: an agent run as root with --run-as-owner starts each job as
// the local account named like its owner, in folders of that account's that nobody else may read;
// the job cannot read the agent's join token or other jobs' folders, nor turn what the agent
// (root) writes and reads in its attempt folder against it (links, a fifo); checkpoints, progress
// and outputs still work; an owner with no account fails the job with a reason naming it;
// --run-as USER runs every job as USER, without the agent's environment. Needs root, useradd and
// setpriv: without them the file fails under CI and skips with a message elsewhere.

import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, test } from "vitest";
import { attemptDirName } from "../../src/agent/attempt/attempt-identity.ts";
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

function uidOf(name: string): number {
  return Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim());
}

/** Submits a job as `owner` (the admin token names the owner; null: admin's own); answers its id. */
async function submit(
  server: StewardProcess,
  owner: string | null,
  spec: Record<string, unknown>,
): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/jobs`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${server.token}`,
      "content-type": "application/json",
      ...(owner ? { "x-steward-user": owner } : {}),
    },
    body: JSON.stringify(spec),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

async function logOf(server: StewardProcess, id: string): Promise<string> {
  return (await cli(server, ["logs", id])).stdout;
}

const unavailable = missing();
if (unavailable && process.env.CI) {
  test("root, useradd and setpriv are available", () => {
    throw new Error(`the run-as tests need root, useradd and setpriv: ${unavailable}`);
  });
} else if (unavailable) {
  console.warn(`skipping the run-as tests: ${unavailable}`);
  test.skip(`run-as: ${unavailable}`, () => {});
} else {
  describe("jobs run as local accounts", () => {
    beforeAll(() => {
      for (const name of [OWNER, OTHER]) {
        execFileSync("sh", ["-c", `userdel ${name} 2>/dev/null; true`]);
        // Ordinary accounts (not --system): agents run no job as one below UID_MIN.
        execFileSync("useradd", [
          "--no-create-home",
          "--home-dir",
          "/nonexistent",
          "--shell",
          "/usr/sbin/nologin",
          name,
        ]);
      }
    });

    afterAll(() => {
      for (const name of [OWNER, OTHER]) execFileSync("sh", ["-c", `userdel ${name} 2>/dev/null; true`]);
    });

    describe("--run-as-owner", () => {
      let server: StewardProcess & { joinToken: string };
      let agent: AgentProcess;
      const dir = tempDir("steward-run-as-");
      // Passable by all, so that what keeps a job out is each file's own mode, not this folder's.
      chmodSync(dir, 0o755);
      const tokenFile = join(dir, "join-token");
      const victim = join(dir, "victim");

      beforeAll(async () => {
        server = await startServerProcess();
        writeFileSync(tokenFile, `${server.joinToken}\n`, { mode: 0o600 });
        writeFileSync(victim, "intact\n", { mode: 0o644 });
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
      });

      it("a job runs as its owner's account alone, in a run folder only that account may enter", async () => {
        const id = await submit(server, OWNER, {
          command: [
            "id -un",
            "stat -c '%U %a' . ..",
            `awk '/^Uid:/ { print ($2 == $3 && $3 == $4 && $4 == $5) ? "one uid" : "UIDS DIFFER" } /^CapEff:/ { print $2 }' /proc/self/status`,
          ].join("; "),
        });
        const job = await waitForJobEnd(server, id);
        expect(job.state).toBe("succeeded");
        expect((await logOf(server, id)).split("\n")).toEqual([
          OWNER,
          `${OWNER} 700`,
          "root 710",
          "one uid",
          "0000000000000000",
          "",
        ]);
        const work = statSync(agent.work);
        expect([work.uid, work.mode & 0o777]).toEqual([0, 0o711]);
      });

      it("the job cannot read the agent's join token, list its work folder, or read another job's folder", async () => {
        // Another owner's job keeps a secret in its folder while the probe runs.
        const keeper = await submit(server, OTHER, {
          command: "echo secret > kept.txt; echo logged; sleep 20",
        });
        await waitFor(
          "the keeper to run",
          async () => (await getJob(server, keeper)).tasks[0].attempts[0]?.state === "running",
          20_000,
        );
        const keeperDir = join(agent.work, "attempts", attemptDirName(keeper, 0, 1));
        await waitFor("its file", () => existsSync(join(keeperDir, "run", "kept.txt")), 10_000);
        // What the probe must not read is there to read.
        const credential = join(agent.work, "host-credential");
        for (const path of [tokenFile, credential, join(keeperDir, "stdout"), join(keeperDir, "start.json")])
          expect(existsSync(path)).toBe(true);
        const probes: [string, string][] = [
          ["token", `cat ${tokenFile}`],
          ["credential", `cat ${credential}`],
          ["work", `ls ${join(agent.work, "attempts")}`],
          ["folder", `ls ${keeperDir}`],
          ["run", `cat ${join(keeperDir, "run", "kept.txt")}`],
          ["log", `cat ${join(keeperDir, "stdout")}`],
          ["start", `cat ${join(keeperDir, "start.json")}`],
        ];
        const probe = await submit(server, OWNER, {
          command: probes
            .map(
              ([name, command]) => `${command} >/dev/null 2>&1 && echo ${name} READ || echo ${name} refused`,
            )
            .join("; "),
        });
        await waitForJobEnd(server, probe);
        expect(await logOf(server, probe)).toBe(probes.map(([name]) => `${name} refused\n`).join(""));
        expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
        await cli(server, ["cancel", keeper]);
      });

      it("the job cannot turn what the agent writes and reads as root against it", async () => {
        const replaced = ["exit", "pid", "stop", "stop.tmp", "stdout", "job.sh", "environment", "start.json"];
        const id = await submit(server, OWNER, {
          outputs: ["own.txt", "leak.txt"],
          command: [
            // An output, its requirements and a checkpoint file that are links to the join token.
            `ln -s ${tokenFile} leak.txt`,
            `ln -s ${tokenFile} "$STEWARD_REQUIREMENTS_FILE"`,
            `ln -s ${tokenFile} "$STEWARD_CHECKPOINT_DIR/token"`,
            "echo mine > own.txt",
            // A progress file that would never answer a reader.
            `mkfifo "$STEWARD_PROGRESS_FILE"`,
            // The files root writes or runs, swapped for links to someone else's file.
            `for f in ${replaced.join(" ")}; do ln -sf ${victim} "../$f" 2>/dev/null && echo "$f REPLACED" || echo "$f kept"; done`,
            `echo "cp ${tokenFile} /tmp" >> ../job.sh 2>/dev/null && echo "job.sh WRITTEN" || echo "job.sh read-only"`,
            // Heartbeats read the progress and requirements meanwhile.
            "sleep 3",
          ].join("; "),
        });
        const job = await waitForJobEnd(server, id);
        expect(await logOf(server, id)).toBe(
          [...replaced.map((name) => `${name} kept`), "job.sh read-only", ""].join("\n"),
        );
        expect(readFileSync(victim, "utf8")).toBe("intact\n");
        // The link to the token is no output: the job fails for it, as for a missing one.
        expect(job.state).toBe("failed");
        expect(job.tasks[0].attempts[0].reason).toBe("output file not the job's own, not taken: leak.txt");
        expect(JSON.stringify(job)).not.toContain(server.joinToken);
      });

      it("checkpoints, progress and outputs work as the account, across a retry", async () => {
        const id = await submit(server, OWNER, {
          outputs: ["result.txt"],
          retry: { maxAttempts: 2, backoffSeconds: 0 },
          checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
          command: [
            `if [ -f "$STEWARD_CHECKPOINT_DIR/state" ]; then`,
            `  { cat "$STEWARD_CHECKPOINT_DIR/state"; stat -c %U "$STEWARD_CHECKPOINT_DIR/state"; } > real.txt`,
            // A link to a file of the job's own is an output all the same.
            "  ln -s real.txt result.txt",
            "else",
            `  echo 0.5 > "$STEWARD_PROGRESS_FILE.tmp" && mv "$STEWARD_PROGRESS_FILE.tmp" "$STEWARD_PROGRESS_FILE"`,
            `  echo saved > "$STEWARD_CHECKPOINT_DIR/state.tmp" && mv "$STEWARD_CHECKPOINT_DIR/state.tmp" "$STEWARD_CHECKPOINT_DIR/state"`,
            "  sleep 4; exit 1",
            "fi",
          ].join("\n"),
        });
        await waitFor(
          "the progress the job wrote",
          async () => (await getJob(server, id)).tasks[0].progress?.fraction === 0.5,
          15_000,
        );
        const job = await waitForJobEnd(server, id);
        expect(job.state).toBe("succeeded");
        expect(job.tasks[0].attempts.map((attempt) => attempt.outcome)).toEqual(["failed", "succeeded"]);
        const result = await fetch(`${server.url}/api/v1/jobs/${id}/outputs/0/result.txt`, {
          headers: { authorization: `Bearer ${server.token}` },
        });
        expect(await result.text()).toBe(`saved\n${OWNER}\n`);
      });

      it("an agent restarted meanwhile takes the job up again, as its account", async () => {
        const id = await submit(server, OWNER, {
          outputs: ["out.txt"],
          command: "sleep 3; id -un > out.txt",
        });
        await waitFor(
          "the job to run",
          async () => (await getJob(server, id)).tasks[0].attempts[0]?.state === "running",
          20_000,
        );
        await agent.kill9();
        agent = await startAgentProcess({
          name: "iso",
          slots: 4,
          work: agent.work,
          servers: [server.url],
          joinToken: "",
          args: ["--token-file", tokenFile, "--run-as-owner"],
        });
        const job = await waitForJobEnd(server, id);
        expect(job.state).toBe("succeeded");
        expect(job.tasks[0].attempts).toHaveLength(1);
        expect(agent.output()).toContain("re-adopted attempt");
        const out = await fetch(`${server.url}/api/v1/jobs/${id}/outputs/0/out.txt`, {
          headers: { authorization: `Bearer ${server.token}` },
        });
        expect(await out.text()).toBe(`${OWNER}\n`);
        // Taken back once the server has its end: nothing of it is left.
        const folder = join(agent.work, "attempts", attemptDirName(id, 0, 1));
        await waitFor("its folder to go", () => !existsSync(folder), 10_000);
      });

      it("a job whose owner has no local account fails, naming the account; it never runs as root", async () => {
        const marker = join(dir, "should-not-exist");
        const id = await submit(server, "nosuchstwuser", { command: `id -un > ${marker}` });
        const job = await waitForJobEnd(server, id);
        expect(job.state).toBe("failed");
        expect(job.tasks[0].attempts[0].outcome).toBe("failed");
        expect(job.tasks[0].attempts[0].reason).toBe(
          'no local account "nosuchstwuser" for the job\'s owner (this agent runs jobs as their owners: --run-as-owner)',
        );
        expect(existsSync(marker)).toBe(false);
      });
    });

    describe("--run-as USER", () => {
      let server: StewardProcess & { joinToken: string };
      let agent: AgentProcess;

      beforeAll(async () => {
        server = await startServerProcess();
        // The join token in the agent's environment: none of it reaches the jobs.
        agent = await startAgentProcess({
          name: "one",
          servers: [server.url],
          joinToken: "",
          prefix: ["env", `STEWARD_JOIN_TOKEN=${server.joinToken}`],
          args: ["--run-as", OTHER],
        });
        await waitFor("the agent to say whom jobs run as", () =>
          agent.output().includes(`jobs run as ${OTHER} (uid ${uidOf(OTHER)}): --run-as`),
        );
      }, 60_000);

      afterAll(async () => {
        await agent?.crash();
        await server?.stop();
        cleanup(server?.data ?? "", agent?.work ?? "");
      });

      it("runs every job as that account, whoever owns it, without the agent's environment", async () => {
        const id = await submit(server, null, {
          command:
            "id -un; echo $HOME; env | grep -q '^STEWARD_JOIN_TOKEN=' && echo TOKEN-IN-ENV || echo no-token",
        });
        expect((await waitForJobEnd(server, id)).state).toBe("succeeded");
        expect(await logOf(server, id)).toBe(`${OTHER}\n/nonexistent\nno-token\n`);
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

      it("refuses at start an unknown account, both flags, or a work folder jobs cannot reach", async () => {
        const dir = tempDir("steward-run-as-work-");
        const base = ["agent", "--server", server.url, "--token", server.joinToken];
        try {
          const unknown = await cli(null, [...base, "--run-as", "nosuchstwuser"]);
          expect([unknown.code, unknown.stderr]).toEqual([
            2,
            "steward: --run-as nosuchstwuser: no such local account\n",
          ]);
          const both = await cli(null, [...base, "--run-as", OTHER, "--run-as-owner"]);
          expect(both.code).toBe(2);
          expect(both.stderr).toContain("--run-as and --run-as-owner do not go together");
          // The temporary folder is 0700: no job of another account could pass to its run folder.
          const hidden = await cli(null, [...base, "--run-as", OTHER, "--work", join(dir, "work")]);
          expect(hidden.code).toBe(2);
          expect(hidden.stderr).toContain(`jobs run as other accounts cannot pass through ${dir} (mode 700)`);
        } finally {
          cleanup(dir);
        }
      });
    });
  });
}
