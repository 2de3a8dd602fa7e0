// The package as users get it: `npm pack`, then `npm install -g` of the tarball into a prefix (from
// the npm cache where it can), then PREFIX/bin/steward from another folder: --version, and `up`
// answering /healthz and running a job. Checks what a checkout hides: the bin script followed
// through npm's link, the pinned Node brought as a dependency, the sources run from node_modules.

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";
import { cleanup, freePort, ROOT, tempDir, waitFor } from "../helpers/steward.ts";

const run = promisify(execFile);
const work = tempDir("steward-install-");
let up: ChildProcess | null = null;

afterAll(async () => {
  if (up?.pid && up.exitCode === null) {
    const exited = new Promise((done) => up?.once("exit", done));
    up.kill("SIGTERM");
    await exited;
  }
  cleanup(work);
});

it("installs from npm pack with npm install -g and runs from any folder", async () => {
  const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string })
    .version;
  await run("npm", ["pack", "--pack-destination", work], { cwd: ROOT });
  const tarball = readdirSync(work).find((name) => name.endsWith(".tgz"));
  expect(tarball).toBe(`steward-${version}.tgz`);
  const prefix = join(work, "prefix");
  await run(
    "npm",
    ["install", "-g", "--prefix", prefix, "--prefer-offline", "--no-audit", "--no-fund", `./${tarball}`],
    { cwd: work, timeout: 80_000 },
  );
  const steward = join(prefix, "bin", "steward");
  const elsewhere = join(work, "elsewhere");
  mkdirSync(elsewhere);
  // Not the checkout's PATH: the installed steward must find its own Node.
  const env = { ...process.env, PATH: `${join(prefix, "bin")}:/usr/local/bin:/usr/bin:/bin` };
  const shown = await run(steward, ["--version"], { cwd: elsewhere, env });
  expect(shown.stdout.trim()).toBe(version);

  const port = await freePort();
  up = spawn("steward", ["up", "--port", String(port), "--agents", "1"], {
    cwd: elsewhere,
    env,
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}`;
  const health = await waitFor("the installed steward up to answer", async () => {
    const answer = await fetch(`${url}/healthz`).catch(() => null);
    return answer?.ok ? ((await answer.json()) as { ok: boolean }) : null;
  });
  expect(health.ok).toBe(true);
  const token = readFileSync(join(elsewhere, ".steward", "admin-token"), "utf8").trim();
  const cliEnv = { ...env, STEWARD_URL: url, STEWARD_TOKEN: token };
  const job = join(elsewhere, "job.yaml");
  writeFileSync(job, 'name: hello\ncommand: "echo installed"\n');
  const id = (await run("steward", ["submit", job], { cwd: elsewhere, env: cliEnv })).stdout.trim();
  await run("steward", ["wait", id, "--timeout", "30"], { cwd: elsewhere, env: cliEnv });
  expect((await run("steward", ["logs", id], { cwd: elsewhere, env: cliEnv })).stdout).toBe("installed\n");
}, 90_000);
