// `steward submit -` reads the job file from standard input, YAML or JSON; its inputs are then
// relative to the current folder, and its errors name standard input.

import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  cleanup,
  cli,
  STEWARD,
  type StewardProcess,
  startUp,
  tempDir,
} from "../helpers/steward.ts";

let steward: StewardProcess;
let work: string;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 2 });
  work = tempDir("steward-stdin-");
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data, work);
});

/** `steward ARGS` in `cwd` with `input` on its standard input. */
function withStdin(args: string[], input: string, cwd: string): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(STEWARD, args, {
      cwd,
      env: { ...process.env, STEWARD_URL: steward.url, STEWARD_TOKEN: steward.token },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", fail);
    child.on("close", (code) => done({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe("steward submit -", () => {
  it("runs a YAML job file read from standard input, its inputs taken from the current folder", async () => {
    writeFileSync(join(work, "data.txt"), "from the current folder\n");
    const yaml = "command: cat data.txt > copy.txt\ninputs: [data.txt]\noutputs: [copy.txt]\n";
    const submitted = await withStdin(["submit", "-", "--wait"], yaml, work);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.split("\n")[0].trim();
    const out = join(work, "out");
    const fetched = await cli(steward, ["fetch", id, "--to", out]);
    expect(fetched.code, fetched.stderr).toBe(0);
    expect(readFileSync(join(out, "copy.txt"), "utf8")).toBe("from the current folder\n");
  });

  it("takes JSON too", async () => {
    const submitted = await withStdin(
      ["submit", "-", "--wait", "--json"],
      '{"command": "true", "name": "piped"}',
      work,
    );
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(JSON.parse(submitted.stdout.slice(0, submitted.stdout.lastIndexOf("}") + 1)).name).toBe("piped");
  });

  it("names standard input in a job file's error, and refuses a missing input", async () => {
    const unknown = await withStdin(["submit", "-"], "command: 'true'\ncolour: red\n", work);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("standard input: line 2, column 1: colour: unknown key");
    const missing = await withStdin(["submit", "-"], "command: 'true'\ninputs: [absent.txt]\n", work);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      "standard input: line 2, column 10: inputs[0]: absent.txt: no such file in",
    );
  });
});
