// Running Python for the tests of the Python client and job SDK: python3 (3.9 or later) with the
// repository's python/ folder on its PYTHONPATH. Without it the tests are skipped, or fail under CI.

import { execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "vitest";
import { ROOT } from "../helpers/steward.ts";

export const PYTHON_DIR = join(ROOT, "python");
export const SCRIPTS = join(ROOT, "test/python/scripts");

/** Why python3 cannot run the tests, or null when it can. */
function unavailable(): string | null {
  try {
    const version = execFileSync("python3", ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], {
      encoding: "utf8",
    }).trim();
    const [major, minor] = version.split(".").map(Number);
    return major > 3 || (major === 3 && minor >= 9) ? null : `python3 is ${version}, not 3.9 or later`;
  } catch (error) {
    return `no python3 (${(error as Error).message.split("\n")[0]})`;
  }
}

const missing = unavailable();

/** describe() when python3 is there; else a skipped test saying why, or a failing one under CI. */
export function describePython(name: string, body: () => void): void {
  if (missing === null) describe(name, body);
  else if (process.env.CI)
    test(`${name}: python3 is available`, () => {
      throw new Error(missing);
    });
  else test.skip(`${name}: ${missing}`, () => {});
}

export interface PythonRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment a Python script of the tests gets: the SDK importable, bytecode left unwritten. */
export function pythonEnv(extra: Record<string, string> = {}): Record<string, string | undefined> {
  return { ...process.env, PYTHONPATH: PYTHON_DIR, PYTHONDONTWRITEBYTECODE: "1", ...extra };
}

/** A running `python3 ARGS` (or `python ARGS`), its output kept; `stdout()` reads what it has printed so far. */
export function startPython(
  args: string[],
  env: Record<string, string> = {},
  cwd = ROOT,
  python = "python3",
) {
  const child = spawn(python, args, { cwd, env: pythonEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const done = new Promise<PythonRun>((resolve) =>
    child.once("close", (code) => resolve({ code, stdout, stderr })),
  );
  return {
    child,
    done,
    stdout: () => stdout,
    stderr: () => stderr,
  };
}

/** Runs `python3 ARGS` (or `python ARGS`) to its end. */
export function runPython(
  args: string[],
  env: Record<string, string> = {},
  cwd = ROOT,
  python = "python3",
): Promise<PythonRun> {
  return startPython(args, env, cwd, python).done;
}
