// Issue 22, items 5 and 8, with a real second account: another local user reads nothing under the
// broker's data folder (`steward server`, and `steward up` with its agents) nor under an agent's
// work folder, after a job with an env and an input ran there; a daemon refuses to start on a
// folder other accounts may write, or one owned by another account; an older data folder left
// readable by all is tightened at start; an agent given no --work keeps its work folder in its
// account's state folder, not in the shared /tmp. Needs root and useradd (as
// test/integration/run-as.test.ts): without them the file fails under CI and skips elsewhere.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, test } from "vitest";
import type { Host } from "../../src/common/api/hosts.ts";
import { accountsUnavailable, makeAccount, removeAccount } from "../helpers/local-accounts.ts";
import { reachableCheckout } from "../helpers/reachable-checkout.ts";
import {
  api,
  cleanup,
  cli,
  STEWARD,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  startUp,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

// An account of this file's own: the run-as tests of other files make and remove theirs.
const OTHER = "stwperms1";

function idOf(flag: "-u" | "-g", name: string): number {
  return Number(execFileSync("id", [flag, name], { encoding: "utf8" }).trim());
}

/** Every path under `root` (root included), as root sees them. */
function walk(root: string): string[] {
  const found = [root];
  for (const entry of readdirSync(root, { recursive: true })) found.push(join(root, String(entry)));
  return found;
}

/** The paths under `root` that OTHER can list (folders) or read (files). */
function readableByOther(root: string): string[] {
  const script = [
    'for p in "$@"; do',
    '  if [ -d "$p" ]; then ls -a -- "$p" >/dev/null 2>&1 && echo "listed $p";',
    '  else head -c 1 -- "$p" >/dev/null 2>&1 && echo "read $p"; fi',
    "done",
    "exit 0",
  ].join("\n");
  const out = execFileSync("sh", ["-c", script, "sh", ...walk(root)], {
    uid: idOf("-u", OTHER),
    gid: idOf("-g", OTHER),
    encoding: "utf8",
  });
  return out.split("\n").filter(Boolean);
}

/** Paths under `root` with any bit for group or others (links aside): made as the daemon's umask says. */
function openToOthers(root: string): string[] {
  return walk(root).flatMap((path) => {
    const info = lstatSync(path);
    return !info.isSymbolicLink() && info.mode & 0o077 ? [`${path} ${(info.mode & 0o777).toString(8)}`] : [];
  });
}

/** A job with an env and an input, run to its success. */
async function runJobWithSecrets(server: StewardProcess, dir: string): Promise<void> {
  writeFileSync(join(dir, "input.txt"), "the input's secret\n");
  writeFileSync(
    join(dir, "job.yaml"),
    [
      'command: "cat input.txt > out.txt; echo $SECRET; umask"',
      "inputs: [input.txt]",
      "outputs: [out.txt]",
      "env: { SECRET: hunter2 }",
      "",
    ].join("\n"),
  );
  const submitted = await cli(server, ["submit", join(dir, "job.yaml")]);
  expect(submitted.code, submitted.stderr).toBe(0);
  const job = await waitForJobEnd(server, submitted.stdout.trim());
  expect(job.state).toBe("succeeded");
  // The job starts with the umask the daemon was started with (this test's), not the daemon's 077.
  const umask = execFileSync("sh", ["-c", "umask"], { encoding: "utf8" }).trim();
  expect(umask).not.toBe("0077");
  expect((await cli(server, ["logs", job.id])).stdout).toBe(`hunter2\n${umask}\n`);
}

/** Waits until an agent's attempts/ is empty: the ended attempt's folder is retired or removed. */
async function attemptsGone(work: string): Promise<void> {
  await waitFor("the attempt folder to be retired", () => readdirSync(join(work, "attempts")).length === 0);
}

/**
 * Runs `bin/steward ARGS` expecting it to refuse to start: its exit code and output, or "running"
 * when it is still up after a while (it is then stopped).
 */
async function refusedStart(args: string[]): Promise<{ code: number | "running"; output: string }> {
  const child = spawn(STEWARD, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number>((done) => child.once("exit", (code) => done(code ?? 128)));
  const code = await Promise.race([exited, sleep(20_000).then(() => "running" as const)]);
  if (code === "running") {
    child.kill("SIGKILL");
    await exited;
  }
  return { code, output };
}

/** The agent process's exit, SIGTERM first. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGTERM");
  await Promise.race([exited, sleep(5000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await exited;
}

const unavailable = accountsUnavailable();
if (unavailable && process.env.CI) {
  test("root and useradd are available", () => {
    throw new Error(`the private-folder tests need root and useradd: ${unavailable}`);
  });
} else if (unavailable) {
  console.warn(`skipping the private-folder tests: ${unavailable}`);
  test.skip(`private folders: ${unavailable}`, () => {});
} else {
  describe("the daemons' folders are private to their account", () => {
    // Passable and readable by all, as a home or /srv folder would be: what keeps OTHER out below
    // must be the daemons' own modes.
    const dir = tempDir("steward-private-");
    chmodSync(dir, 0o755);

    beforeAll(() => {
      makeAccount(OTHER, ["--system"]);
    });

    afterAll(() => {
      removeAccount(OTHER);
      cleanup(dir);
    });

    it("steward server and steward agent: another account reads nothing of theirs", async () => {
      const data = join(dir, "server-data");
      const work = join(dir, "agent-work");
      const jobDir = join(dir, "server-job");
      mkdirSync(jobDir);
      const server = await startServerProcess({ data });
      const agent = await startAgentProcess({
        name: "private",
        servers: [server.url],
        joinToken: server.joinToken,
        work,
      });
      try {
        await waitFor("the agent to attach", async () =>
          ((await api(server, "GET", "/api/v1/hosts")) as Host[]).some((host) => host.connected),
        );
        await runJobWithSecrets(server, jobDir);
        await attemptsGone(work);
        expect(readableByOther(data)).toEqual([]);
        expect(readableByOther(work)).toEqual([]);
        expect(openToOthers(data)).toEqual([]);
        expect(openToOthers(work)).toEqual([]);
      } finally {
        await agent.stop();
        await server.stop();
      }
    }, 90_000);

    it("steward up, its agents under the data folder: another account reads nothing", async () => {
      const data = join(dir, "up-data");
      const jobDir = join(dir, "up-job");
      mkdirSync(jobDir);
      const steward = await startUp({ data });
      try {
        await runJobWithSecrets(steward, jobDir);
        await attemptsGone(join(data, "agents", "local-1"));
        expect(readableByOther(data)).toEqual([]);
        expect(openToOthers(data)).toEqual([]);
      } finally {
        await steward.stop();
      }
    }, 90_000);

    it("a data folder an older version left readable by all is tightened at start, and says so", async () => {
      const data = join(dir, "old-data");
      mkdirSync(join(data, "blobs"), { recursive: true, mode: 0o755 });
      chmodSync(data, 0o755);
      chmodSync(join(data, "blobs"), 0o755);
      writeFileSync(join(data, "admin-token"), "old-admin-token\n", { mode: 0o644 });
      chmodSync(join(data, "admin-token"), 0o644);
      const server = await startServerProcess({ data });
      try {
        expect(server.token).toBe("old-admin-token");
        expect((statSync(data).mode & 0o777).toString(8)).toBe("700");
        expect((statSync(join(data, "blobs")).mode & 0o777).toString(8)).toBe("700");
        expect((statSync(join(data, "admin-token")).mode & 0o777).toString(8)).toBe("600");
        await waitFor("the warning", () => server.output().includes(`tightened the data folder ${data}`));
        expect(readableByOther(data)).toEqual([]);
      } finally {
        await server.stop();
      }
    }, 60_000);

    describe("a daemon refuses a folder another account may write, or owns", () => {
      let server: StewardProcess & { joinToken: string };
      beforeAll(async () => {
        server = await startServerProcess();
      }, 60_000);
      afterAll(async () => {
        await server?.stop();
        cleanup(server?.data ?? "");
      });

      /** A folder made for one case: group-writable, or OTHER's. */
      function folder(name: string, how: "group-writable" | "other's"): string {
        const path = join(dir, name);
        mkdirSync(path);
        if (how === "group-writable") chmodSync(path, 0o775);
        else chownSync(path, idOf("-u", OTHER), idOf("-g", OTHER));
        return path;
      }

      const daemons = [
        { daemon: "server", flag: "--data", what: "data folder" },
        { daemon: "up", flag: "--data", what: "data folder" },
        { daemon: "agent", flag: "--work", what: "work folder" },
      ] as const;

      it.each(daemons)(
        "steward $daemon $flag on a folder others may write: exit 2, naming it and the fix",
        async ({ daemon, flag, what }) => {
          const path = folder(`writable-${daemon}`, "group-writable");
          const args =
            daemon === "agent"
              ? [
                  "agent",
                  "--server",
                  server.url,
                  "--token",
                  server.joinToken,
                  "--name",
                  "refused-writable",
                  flag,
                  path,
                ]
              : [daemon, flag, path, "--port", "0"];
          const { code, output } = await refusedStart(args);
          expect(code).toBe(2);
          expect(output).toContain(`the ${what} ${path} is writable by other accounts (mode 775)`);
          expect(output).toContain(`chmod go-w ${path}`);
          // Nothing was made in it.
          expect(readdirSync(path)).toEqual([]);
        },
      );

      it.each(daemons)(
        "steward $daemon $flag on a folder of another account's: exit 2, naming it and the fix",
        async ({ daemon, flag, what }) => {
          const path = folder(`others-${daemon}`, "other's");
          const args =
            daemon === "agent"
              ? [
                  "agent",
                  "--server",
                  server.url,
                  "--token",
                  server.joinToken,
                  "--name",
                  "refused-others",
                  flag,
                  path,
                ]
              : [daemon, flag, path, "--port", "0"];
          const { code, output } = await refusedStart(args);
          expect(code).toBe(2);
          expect(output).toContain(`the ${what} ${path} belongs to ${OTHER} (uid ${idOf("-u", OTHER)})`);
          expect(output).toContain(`not to this daemon's account, root`);
          expect(readdirSync(path)).toEqual([]);
        },
      );

      it("steward server --blobs on a folder others may write: exit 2", async () => {
        const path = folder("writable-blobs", "group-writable");
        const { code, output } = await refusedStart([
          "server",
          "--data",
          join(dir, "blobs-data"),
          "--blobs",
          path,
          "--port",
          "0",
        ]);
        expect(code).toBe(2);
        expect(output).toContain(`the blobs folder ${path} is writable by other accounts (mode 775)`);
      });

      it.for<{ case: string; state: boolean }>([
        { case: "XDG_STATE_HOME", state: true },
        { case: "HOME/.local/state", state: false },
      ])(
        "an agent given no --work keeps its work folder under $case, private to its account",
        { timeout: 60_000 },
        async ({ state }, context) => {
          // The agent runs as OTHER from this checkout, bind-mounted where OTHER can reach it when
          // the checkout lies under a folder only root may pass (helpers/reachable-checkout.ts).
          // The choice of folder is also checked as a pure function in agent-own-files.test.ts.
          const checkout = reachableCheckout(OTHER);
          if ("unavailable" in checkout) {
            if (process.env.CI) throw new Error(checkout.unavailable);
            context.skip(checkout.unavailable);
            return;
          }
          onTestFinished(() => checkout.release());
          const name = `permsdefault${state ? "x" : "h"}`;
          const home = join(dir, `home-${name}`);
          mkdirSync(home);
          chownSync(home, idOf("-u", OTHER), idOf("-g", OTHER));
          const expected = state
            ? join(home, "state", "steward", "agent", name)
            : join(home, ".local", "state", "steward", "agent", name);
          const shared = join("/tmp", `steward-agent-${name}`);
          const env: NodeJS.ProcessEnv = {
            ...process.env,
            HOME: home,
            STEWARD_COMPILE_CACHE: join(home, "compile-cache"),
            STEWARD_LOG_LEVEL: "info",
          };
          delete env.XDG_STATE_HOME;
          if (state) env.XDG_STATE_HOME = join(home, "state");
          const child = spawn(
            checkout.steward,
            [
              "agent",
              "--server",
              server.url,
              "--token",
              server.joinToken,
              "--name",
              name,
              "--slots",
              "1",
              "--speed",
              "1",
            ],
            { uid: idOf("-u", OTHER), gid: idOf("-g", OTHER), env, stdio: ["ignore", "pipe", "pipe"] },
          );
          let output = "";
          child.stdout.on("data", (chunk) => {
            output += chunk;
          });
          child.stderr.on("data", (chunk) => {
            output += chunk;
          });
          try {
            await waitFor(
              `the agent's work folder at ${expected}`,
              () => {
                if (existsSync(shared)) throw new Error(`the agent made ${shared}: ${output}`);
                return existsSync(join(expected, "attempts"));
              },
              15_000,
            );
            await waitFor("the agent to attach", async () =>
              ((await api(server, "GET", "/api/v1/hosts")) as Host[]).some(
                (host) => host.name === name && host.connected,
              ),
            );
            const info = statSync(expected);
            expect([info.uid, (info.mode & 0o777).toString(8)]).toEqual([idOf("-u", OTHER), "700"]);
            expect(existsSync(shared)).toBe(false);
          } finally {
            await stopChild(child);
            cleanup(shared);
          }
        },
      );
    });
  });
}
