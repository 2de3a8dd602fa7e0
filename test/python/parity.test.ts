// The Python client at parity with the CLI, against a real `steward up`: workflows, a Job handle
// whose wait() raises for a failed job, dry run, explain, many jobs' states and cancels at once,
// acct, shares and QoS, asyncio; and the CLI's 5 s give-up when no server answers.

import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { api, cleanup, type StewardProcess, startUp, tempDir } from "../helpers/steward.ts";
import { describePython, runPython, SCRIPTS } from "./python.ts";

let up: StewardProcess;
const work = tempDir("steward-python-parity-");

/** A loopback port nothing listens on: a connection to it is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

describePython("the Python client at parity with the CLI", () => {
  beforeAll(async () => {
    const qos = join(work, "qos.yaml");
    writeFileSync(qos, "tiers:\n  normal: {}\n  high:\n    priority: 10\n");
    up = await startUp({ slots: 4, args: ["--qos", qos] });
  });

  afterAll(async () => {
    await up?.stop();
    cleanup(work, up?.data ?? "");
  });

  it("submits and waits on workflows, raises JobFailed, dry-runs, explains, asks and cancels many jobs, reads acct, shares, QoS, and waits and follows with asyncio", async () => {
    const user = await api(up, "POST", "/api/v1/tokens", {
      user: "pyq",
      role: "user",
      qos: ["normal", "high"],
    });
    const run = await runPython([join(SCRIPTS, "parity_calls.py")], {
      STEWARD_URL: up.url,
      STEWARD_TOKEN: up.token,
      USER_TOKEN: user.token,
      WORK: work,
    });
    expect(run.stderr + run.stdout).toContain("all done");
    expect(run.code, run.stderr).toBe(0);
  }, 180_000);

  it("gives up in about 5 s when no server answers, as the CLI does; retry_seconds changes it", async () => {
    const port = await closedPort();
    const script = [
      "import sys, time, steward",
      "client = steward.Client(sys.argv[1], 'sta_none', **({'retry_seconds': float(sys.argv[2])} if len(sys.argv) > 2 else {}))",
      "started = time.monotonic()",
      "try:",
      "    client.job('1')",
      "except steward.Unreachable as error:",
      "    print(f'{time.monotonic() - started:.2f}', error.message)",
    ].join("\n");
    const url = `http://127.0.0.1:${port}`;
    const byDefault = await runPython(["-c", script, url]);
    expect(byDefault.code, byDefault.stderr).toBe(0);
    const seconds = Number(byDefault.stdout.split(" ")[0]);
    // Tries the server again and again (not at once), and stops within the CLI's 5 s budget.
    expect(seconds).toBeGreaterThan(2.5);
    expect(seconds).toBeLessThan(10);
    expect(byDefault.stdout).toMatch(
      /cannot reach the Steward server at http:\/\/127\.0\.0\.1:\d+ .*gave up after \d+ tries/,
    );
    const shorter = await runPython(["-c", script, url, "1"]);
    expect(Number(shorter.stdout.split(" ")[0]), shorter.stderr).toBeLessThan(2.5);
  }, 60_000);
});
