// The job SDK in a real child process: checkpoints saved atomically and read back, progress,
// requirements, restart flag, and the stop request (SIGTERM) handler.

import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

const SDK = join(import.meta.dirname, "../../../../src/common/sdk/index.js");
let dir: string;

beforeEach(() => {
  dir = tempDir("steward-sdk-");
});

afterEach(() => cleanup(dir));

function runJob(code: string, env: Record<string, string>, onSpawn?: (pid: number) => void) {
  const script = join(dir, "job.mjs");
  writeFileSync(script, `const sdk = await import(${JSON.stringify(SDK)});\n${code}`);
  return new Promise<{ code: number | null; stdout: string }>((resolve) => {
    const child = spawn(process.execPath, [script], { env: { ...process.env, ...env } });
    let stdout = "";
    let ready = false;
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      // Once: a later chunk (the job's "stopping") must not send a second signal to a process gone.
      if (onSpawn && !ready && stdout.includes("ready")) {
        ready = true;
        onSpawn(child.pid!);
      }
    });
    child.on("exit", (code) => resolve({ code, stdout }));
  });
}

it("saves and loads checkpoints atomically, and reports progress and the restart flag", async () => {
  const env = {
    STEWARD_CHECKPOINT_DIR: join(dir, "ck"),
    STEWARD_PROGRESS_FILE: join(dir, "progress"),
    STEWARD_REQUIREMENTS_FILE: join(dir, "requirements"),
    STEWARD_RESTARTED: "1",
  };
  const first = await runJob(
    `console.log(sdk.restarted(), JSON.stringify(sdk.loadCheckpoint()));
     sdk.saveCheckpoint({ step: 7 });
     sdk.saveCheckpoint(new Uint8Array([1, 2, 3]), "raw.bin");
     sdk.progress(1.5);
     sdk.requirements('host.labels.zone == "b"');`,
    env,
  );
  expect(first.stdout).toBe("true null\n");
  expect(JSON.parse(readFileSync(join(dir, "ck", "state.json"), "utf8"))).toEqual({ step: 7 });
  expect(readFileSync(join(dir, "progress"), "utf8")).toBe("1");
  expect(readFileSync(join(dir, "requirements"), "utf8")).toBe('host.labels.zone == "b"');
  // No temporary file is left beside the state.
  expect(readdirSync(join(dir, "ck")).sort()).toEqual(["raw.bin", "state.json"]);
  const second = await runJob(
    `console.log(JSON.stringify(sdk.loadCheckpoint()), [...sdk.loadCheckpoint("raw.bin")].join(","));`,
    env,
  );
  expect(second.stdout).toBe('{"step":7} 1,2,3\n');
});

it("calls the stop handler on SIGTERM, which saves and exits", async () => {
  const env = { STEWARD_CHECKPOINT_DIR: join(dir, "ck") };
  const result = await runJob(
    `let step = 0;
     sdk.onStopRequested(() => { sdk.saveCheckpoint({ step }); console.log("stopping", sdk.isStopRequested()); process.exit(0); });
     setInterval(() => step++, 10);
     console.log("ready");`,
    env,
    (pid) => setTimeout(() => process.kill(pid, "SIGTERM"), 100),
  );
  expect(result.code).toBe(0);
  expect(result.stdout).toContain("stopping true");
  expect(existsSync(join(dir, "ck", "state.json"))).toBe(true);
  expect(JSON.parse(readFileSync(join(dir, "ck", "state.json"), "utf8")).step).toBeGreaterThan(0);
});
