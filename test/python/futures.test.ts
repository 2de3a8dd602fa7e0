// steward.futures (python/steward/futures.py) against a real server and agent: submit and map,
// lambdas through cloudpickle, remote exceptions re-raised with their type, a job cancelled from
// outside, and shutdown(cancel_futures=True) cancelling the queued jobs.

import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it, test } from "vitest";
import {
  type AgentProcess,
  cleanup,
  type StewardProcess,
  startAttachedAgent,
  startServerProcess,
  tempDir,
} from "../helpers/steward.ts";
import { describePython, PYTHON_DIR, pythonEnv, runPython, SCRIPTS } from "./python.ts";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;

/** Whether this python3 imports cloudpickle (Debian's python3-cloudpickle), which lambdas need. */
function hasCloudpickle(): boolean {
  try {
    execFileSync("python3", ["-c", "import cloudpickle"], { env: pythonEnv(), stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describePython("steward.futures", () => {
  const cloudpickle = hasCloudpickle();

  beforeAll(async () => {
    server = await startServerProcess();
    agent = await startAttachedAgent(server, "f1", 4);
  });

  afterAll(async () => {
    await agent?.crash();
    await server?.stop();
    cleanup(agent?.work ?? "", server?.data ?? "");
  });

  if (cloudpickle)
    it("sends calls with cloudpickle, for lambdas", async () => {
      const run = await runPython([
        "-c",
        "from steward import _futures_payload as p; print(p.local_pickler()[0])",
      ]);
      expect(run.stdout.trim(), run.stderr).toBe("cloudpickle");
    });
  else if (process.env.CI)
    test("has cloudpickle, for lambdas (python3-cloudpickle)", () => {
      throw new Error("python3 cannot import cloudpickle: install python3-cloudpickle (.ci/run does)");
    });
  else
    test.skip("has cloudpickle, for lambdas: python3 cannot import cloudpickle, lambdas are not tried", () => {});

  it("submits, maps, re-raises remote exceptions, reports cancelled jobs and cancels on shutdown", async () => {
    const run = await runPython([join(SCRIPTS, "futures_calls.py")], {
      STEWARD_URL: server.url,
      STEWARD_TOKEN: server.token,
      SCRIPTS,
      LAMBDAS: cloudpickle ? "1" : "0",
    });
    expect(run.stderr + run.stdout).toContain("all done");
    expect(run.code, run.stderr).toBe(0);
  }, 300_000);

  it("does the same with the standard pickle where cloudpickle is not importable (no lambdas)", async () => {
    // A cloudpickle that fails to import, ahead of any installed one, on the caller's side only.
    const hidden = tempDir("steward-no-cloudpickle-");
    writeFileSync(join(hidden, "cloudpickle.py"), 'raise ImportError("hidden for the test")\n');
    const run = await runPython([join(SCRIPTS, "futures_calls.py")], {
      PYTHONPATH: `${hidden}:${PYTHON_DIR}`,
      STEWARD_URL: server.url,
      STEWARD_TOKEN: server.token,
      SCRIPTS,
      LAMBDAS: "0",
    });
    cleanup(hidden);
    expect(run.stderr + run.stdout).toContain("all done");
    expect(run.code, run.stderr).toBe(0);
  }, 300_000);
});
