// deploy/systemd's units parse: systemd-analyze verify (where systemd is installed) finds nothing to
// say about them, with ExecStart pointed at this checkout's bin/steward (verify checks it exists).

import { execFile, execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { cleanup, ROOT, STEWARD, tempDir } from "../helpers/steward.ts";

const UNITS = join(ROOT, "deploy", "systemd");
const work = tempDir("steward-units-");

afterAll(() => cleanup(work));

function hasSystemdAnalyze(): boolean {
  try {
    execFileSync("systemd-analyze", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

it("the server and agent units pass systemd-analyze verify without a warning", async (context) => {
  if (!hasSystemdAnalyze()) {
    // .ci/run installs systemd (which has systemd-analyze) where it is missing.
    if (process.env.CI) throw new Error("systemd-analyze is not installed");
    return context.skip("systemd-analyze is not installed");
  }
  const units = readdirSync(UNITS).filter((name) => name.endsWith(".service"));
  expect(units.sort()).toEqual(["steward-agent.service", "steward-server.service"]);
  for (const unit of units) {
    const text = readFileSync(join(UNITS, unit), "utf8");
    expect(text).toContain("ExecStart=/usr/local/bin/steward ");
    writeFileSync(join(work, unit), text.replaceAll("/usr/local/bin/steward", STEWARD));
  }
  const answer = await new Promise<{ code: number; output: string }>((done) =>
    execFile(
      "systemd-analyze",
      ["verify", "--man=no", ...units.map((unit) => join(work, unit))],
      (error, stdout, stderr) => done({ code: error ? 1 : 0, output: stdout + stderr }),
    ),
  );
  expect(answer.output).toBe("");
  expect(answer.code).toBe(0);
});
