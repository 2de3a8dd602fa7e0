// Issue 22, item 10: a job's `env` is the job's own. Command lines are world-readable
// (/proc/PID/cmdline), so while jobs with a secret in their env start and run, no process on the
// machine may have it on its command line, not even for the moment between one exec and the next
// (setpriv, then what it runs); and another unprivileged account may read it from no file: not the
// attempt folders' files, not a process's environ. Checked on a --run-as-owner host and on an
// agent run as root without run-as (jobs as root). Needs root, useradd and setpriv: without them
// the file fails under CI and skips elsewhere.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeRunAs, makeAccount, removeAccount, submitAs } from "../helpers/local-accounts.ts";
import {
  type AgentProcess,
  cleanup,
  ROOT,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

// Accounts of this file's own: the run-as tests of other files make and remove theirs.
const OWNER = "stwenvowner1";
const READER = "stwenvreader1";
const TASKS = 6;

/** What the scanner (cmdline-scan.ts) found: for each string, the command lines that held it. */
interface ScanResult {
  scans: number;
  hits: Record<string, string[]>;
}

/** Starts the command-line scanner for `needles`, which it gets in its environment, not its command line. */
async function startScanner(needles: string[]): Promise<{ stop: () => Promise<ScanResult> }> {
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, "test/helpers/cmdline-scan.ts")], {
    env: { ...process.env, SCAN_NEEDLES: needles.join("\n") },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => lines.push(line));
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  await waitFor("the scanner to be ready", () => lines.includes("ready"), 10_000, 20);
  return {
    async stop() {
      child.kill("SIGTERM");
      await exited;
      return JSON.parse(lines.at(-1) ?? "{}") as ScanResult;
    },
  };
}

/** Every regular file under `dir`, as root sees them. */
function filesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    const path = join(dir, entry);
    if (lstatSync(path, { throwIfNoEntry: false })?.isFile()) found.push(path);
  }
  return found;
}

/** All that `account` reads of `files` and of every process's environ, each file's text in turn. */
function readAs(account: string, files: string[]): string {
  return execFileSync(
    "runuser",
    [
      "-u",
      account,
      "--",
      "/bin/sh",
      "-c",
      'for f in "$@" /proc/[0-9]*/environ; do cat -- "$f" 2>/dev/null; done; true',
      "reader",
      ...files,
    ],
    { encoding: "latin1", maxBuffer: 64 << 20 },
  );
}

/** A task's stdout, through the API (no command line of the test's holds anything of the job's). */
async function logOf(server: { url: string; token: string }, id: string, task: number): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/jobs/${id}/logs?task=${task}`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  return response.text();
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

describeRunAs(
  "the job env secrecy tests",
  "a job's env is on no command line and in no file another account may read",
  () => {
    let server: StewardProcess & { joinToken: string };
    let readerUid: number;

    beforeAll(async () => {
      makeAccount(OWNER);
      readerUid = makeAccount(READER);
      server = await startServerProcess();
    }, 60_000);

    afterAll(async () => {
      await server?.stop();
      removeAccount(OWNER);
      removeAccount(READER);
      cleanup(server?.data ?? "");
    });

    it.each([
      ["a --run-as-owner host", "owner", ["--run-as-owner"], []],
      ["an agent run as root without run-as", "plain", [], []],
      // The shell launcher (where perl is missing) hands the env over in job.sh, not a pipe.
      [
        "an agent run as root without run-as, with the shell launcher",
        "plain-sh",
        [],
        ["env", "STEWARD_LAUNCHER=sh"],
      ],
    ])("on %s", async (_what, name, args, prefix) => {
      const secret = `secret-${randomBytes(12).toString("hex")}`;
      // How the job's env reached it before: on setpriv's and env's command lines, for a moment.
      // Run now and then while the scanner looks, it shows the scanner catches such a moment.
      const control = `control-${randomBytes(12).toString("hex")}`;
      const agent: AgentProcess = await startAgentProcess({
        name,
        slots: TASKS,
        servers: [server.url],
        joinToken: server.joinToken,
        args,
        ...(prefix.length ? { prefix } : {}),
      });
      const scanner = await startScanner([secret, control]);
      let result: ScanResult | null = null;
      try {
        // Passable by all, so that what keeps the reader out is each file's own mode.
        chmodSync(agent.work, 0o711);
        await waitFor("the agent to say whom jobs run as", () => agent.output().includes("jobs run as"));
        const id = await submitAs(server, OWNER, {
          command: `printf %s "$API_SECRET" | sha256sum | cut -c1-16; sleep 4`,
          env: { API_SECRET: secret },
          array: { count: TASKS },
          requirements: `host.name == "${name}"`,
        });
        for (let round = 0; round < 10; round++) {
          execFileSync("setpriv", [
            `--reuid=${readerUid}`,
            `--regid=${readerUid}`,
            "--clear-groups",
            "--reset-env",
            "--",
            "env",
            "--",
            `CONTROL=${control}`,
            "/bin/true",
          ]);
          await new Promise((done) => setTimeout(done, 100));
        }
        // While the tasks run, their folders hold what the agent wrote for them.
        const files = await waitFor(
          "the tasks' folders",
          () => {
            const all = filesUnder(agent.work);
            return all.filter((path) => path.endsWith("start.json")).length === TASKS ? all : null;
          },
          20_000,
        );
        const secretFiles = files.filter((path) => readFileSync(path, "latin1").includes(secret));
        expect(secretFiles.length).toBeGreaterThan(0);
        expect(readAs(READER, files)).not.toContain(secret);

        const job = await waitForJobEnd(server, id);
        expect(job.state).toBe("succeeded");
        for (let task = 0; task < TASKS; task++)
          expect(await logOf(server, id, task)).toBe(`${digest(secret)}\n`);
        result = await scanner.stop();
      } finally {
        result ??= await scanner.stop();
        await agent.crash();
        cleanup(agent.work);
      }
      expect(result.scans).toBeGreaterThan(10);
      expect(result.hits[control].length).toBeGreaterThan(0);
      expect(result.hits[secret]).toEqual([]);
    });
  },
);
