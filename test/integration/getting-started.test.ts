// The getting-started guide, run as written: every command of its console blocks, in order, in a
// fresh copy of this checkout (its tracked and new files, no data folder, `npm ci` run there as
// the guide says), each checked against the output and exit code the guide shows
// (test/helpers/doc-tour.ts reads them). `steward up &` is started in the background and left
// running to the end, on a free port: the tour sets STEWARD_PORT (up's --port) and STEWARD_URL for
// every command, which is how a reader on another port would run it. Then every command of the
// command-line reference answers --help.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { closeSync, copyFileSync, mkdirSync, openSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { outputMismatch, type TourStep, tourSteps } from "../helpers/doc-tour.ts";
import { freePort, tempDir, waitFor } from "../helpers/steward.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const GUIDE = join(ROOT, "docs", "getting-started.md");
const STEP_TIMEOUT_MS = 180_000;

/** The checkout's files (tracked, and new ones not ignored) copied to `into`. */
function copyCheckout(into: string): void {
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: ROOT,
    encoding: "utf8",
  })
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    const from = join(ROOT, file);
    try {
      mkdirSync(dirname(join(into, file)), { recursive: true });
      copyFileSync(from, join(into, file));
    } catch (error) {
      // A tracked file deleted in the work tree is not part of the checkout as it is.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
}

/** Runs one command as a reader's shell would, stdout and stderr into one stream as a terminal shows. */
function runStep(
  step: TourStep,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ output: string; code: number }> {
  const outputFile = join(cwd, "..", `step-${step.line}.out`);
  const fd = openSync(outputFile, "w");
  return new Promise((done, fail) => {
    const child = spawn("bash", ["-c", step.command], {
      cwd,
      env,
      stdio: ["ignore", fd, fd],
      detached: true,
    });
    const timer = setTimeout(() => {
      process.kill(-child.pid!, "SIGKILL");
      fail(new Error(`line ${step.line}: \`${step.command}\` did not end in ${STEP_TIMEOUT_MS / 1000} s`));
    }, STEP_TIMEOUT_MS);
    child.once("error", fail);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      closeSync(fd);
      done({ output: readFileSync(outputFile, "utf8"), code: code ?? 128 + (signal ? 9 : 0) });
    });
  });
}

describe("docs/getting-started.md, run as written", () => {
  const base = tempDir("steward-tour-");
  const cwd = join(base, "steward");
  const background: ChildProcess[] = [];

  afterAll(async () => {
    for (const child of background) {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {}
    }
    await Promise.all(
      background.map((child) =>
        child.exitCode !== null || child.signalCode !== null
          ? null
          : new Promise((done) => {
              const kill = setTimeout(() => {
                try {
                  process.kill(-child.pid!, "SIGKILL");
                } catch {}
              }, 10_000);
              child.once("exit", () => done(clearTimeout(kill)));
            }),
      ),
    );
    rmSync(base, { recursive: true, force: true });
  }, 30_000);

  it("shows what each command prints and how it exits", { timeout: 900_000 }, async () => {
    const steps = tourSteps(readFileSync(GUIDE, "utf8"));
    expect(steps.length).toBeGreaterThan(20);
    mkdirSync(cwd);
    copyCheckout(cwd);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = { ...process.env, STEWARD_PORT: String(port), STEWARD_URL: url };
    for (const name of ["STEWARD_TOKEN", "STEWARD_DATA", "STEWARD_CONFIG", "NODE_COMPILE_CACHE"])
      delete env[name];
    for (const step of steps) {
      if (step.background) {
        const log = openSync(join(base, `background-${step.line}.log`), "w");
        const child = spawn("bash", ["-c", step.command], {
          cwd,
          env,
          stdio: ["ignore", log, log],
          detached: true,
        });
        closeSync(log);
        background.push(child);
        // What a reader does by waiting a moment: the server answers before the next command.
        await waitFor(`line ${step.line}: \`${step.command}\` answering at ${url}`, async () => {
          if (child.exitCode !== null)
            throw new Error(`line ${step.line}: \`${step.command}\` exited ${child.exitCode}`);
          return (await fetch(`${url}/healthz`).catch(() => null))?.ok ? true : null;
        });
        continue;
      }
      const { output, code } = await runStep(step, cwd, env);
      const mismatch = outputMismatch(step.expected, output.split("\n"));
      const where = `docs/getting-started.md line ${step.line}: $ ${step.command}`;
      expect(mismatch === null ? "as shown" : `${where}\n${mismatch}`).toBe("as shown");
      expect(code, `${where}\nexit code (output:\n${output})`).toBe(step.exitCode);
    }
  });

  it("answers --help for every command of the command-line reference", async () => {
    const reference = readFileSync(join(ROOT, "docs", "cli.md"), "utf8");
    const commands = [...reference.matchAll(/^#{3,4} steward ([a-z][a-z -]*)$/gm)].map((match) =>
      match[1].trim(),
    );
    expect(commands).toContain("submit");
    for (const command of commands) {
      const output = execFileSync(join(ROOT, "bin", "steward"), [...command.split(" "), "--help"], {
        encoding: "utf8",
      });
      expect(output, command).toContain("Usage: steward");
    }
  });
});
