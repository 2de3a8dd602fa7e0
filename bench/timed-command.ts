// Runs one command to its end and times it (wall clock, from the spawn to the exit), keeping its
// output for the figures and for the message when it fails. Used by the benchmarks that drive a
// workflow engine as a whole program (snakemake-overhead.ts, toil-overhead.ts).

import { execFileSync, spawn } from "node:child_process";

export interface TimedCommand {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  /** Killed (SIGKILL) past this, and the run fails. */
  timeoutMs: number;
}

export interface TimedRun {
  seconds: number;
  stdout: string;
  stderr: string;
}

/** Runs the command; rejects with the end of its output when it exits other than 0 or times out. */
export function runTimed(run: TimedCommand): Promise<TimedRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(run.command, run.args, {
      cwd: run.cwd,
      env: run.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), run.timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      const seconds = (performance.now() - started) / 1000;
      if (code === 0) resolve({ seconds, stdout, stderr });
      else
        reject(
          new Error(
            `${run.command} ${run.args.join(" ")} ended ${signal ?? `with ${code}`} after ${seconds.toFixed(1)} s:\n${(stdout + stderr).slice(-3000)}`,
          ),
        );
    });
  });
}

/** Whether `command ARGS` runs and exits 0 (a tool's presence). */
export function runsCleanly(command: string, args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: "ignore", timeout: 60_000 });
    return true;
  } catch {
    return false;
  }
}
