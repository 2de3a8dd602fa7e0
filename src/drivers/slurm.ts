// Pilots through Slurm's own commands: sbatch to submit, squeue to list, scancel to cancel. Each
// pilot is a batch job named `steward-pilot-POOL`, so a pool's pilots are found by name.

import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { type BatchDriver, DriverError, type PilotRequest, type PilotStatus } from "./driver.ts";

const run = promisify(execFile);

/** A batch command that has not answered in this time has failed (the pool's view is kept). */
export const SLURM_COMMAND_TIMEOUT_MS = 15_000;

/** Slurm job states (squeue %T) as pilot states; states not listed mean the job is ending. */
const STATES: Record<string, PilotStatus["state"]> = {
  PENDING: "pending",
  CONFIGURING: "pending",
  REQUEUED: "pending",
  REQUEUE_HOLD: "pending",
  RESV_DEL_HOLD: "pending",
  SUSPENDED: "pending",
  RUNNING: "running",
  RESIZING: "running",
  SIGNALING: "ending",
  STAGE_OUT: "ending",
  COMPLETING: "ending",
  STOPPED: "ending",
};

export function pilotJobName(pool: string): string {
  return `steward-pilot-${pool}`;
}

/** Seconds as sbatch --time wants them: D-HH:MM:SS, rounded up to whole minutes (Slurm's unit). */
export function slurmTime(seconds: number): string {
  const minutes = Math.max(1, Math.ceil(seconds / 60));
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const pad = (value: number) => String(value).padStart(2, "0");
  return `${days}-${pad(hours)}:${pad(minutes % 60)}:00`;
}

/** sbatch's arguments for a pilot (the command goes on its standard input as a script). */
export function sbatchArgs(request: PilotRequest): string[] {
  return [
    "--parsable",
    `--job-name=${pilotJobName(request.pool)}`,
    `--cpus-per-task=${request.cpus}`,
    "--ntasks=1",
    `--time=${slurmTime(request.walltimeSeconds)}`,
    `--output=${join(request.logDir, "pilot-%j.log")}`,
    // Slurm would requeue a pilot whose node failed; the pool starts a new one itself.
    "--no-requeue",
    ...(request.partition ? [`--partition=${request.partition}`] : []),
    ...(request.extraArgs ?? []),
  ];
}

/** Slurm job states after which the job does not run again: such a pilot is gone. */
const ENDED = new Set([
  "COMPLETED",
  "CANCELLED",
  "FAILED",
  "TIMEOUT",
  "NODE_FAIL",
  "BOOT_FAIL",
  "DEADLINE",
  "OUT_OF_MEMORY",
  "PREEMPTED",
]);

/** squeue lines `ID|STATE|REASON` as pilot statuses; ended jobs are left out. */
export function parseSqueue(output: string): PilotStatus[] {
  const pilots: PilotStatus[] = [];
  for (const line of output.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "") continue;
    const [id, batchState = "", reason = ""] = trimmed.split("|");
    if (ENDED.has(batchState)) continue;
    const state = STATES[batchState] ?? "ending";
    pilots.push({ id, state, batchState, reason: reason === "None" ? "" : reason });
  }
  return pilots;
}

async function command(name: string, args: string[], input?: string): Promise<string> {
  try {
    const child = run(name, args, { timeout: SLURM_COMMAND_TIMEOUT_MS });
    if (input !== undefined) {
      child.child.stdin?.end(input);
    }
    const { stdout } = await child;
    return stdout;
  } catch (error) {
    const failed = error as Error & { stderr?: string; stdout?: string; code?: string | number };
    const detail = failed.stderr?.trim() || failed.stdout?.trim() || failed.message;
    throw new DriverError(`${name}: ${detail.split("\n").slice(-3).join(" ")}`);
  }
}

export class SlurmDriver implements BatchDriver {
  readonly name = "slurm";

  async submit(request: PilotRequest): Promise<string> {
    // Slurm does not make the output's folder: a pilot whose log cannot be opened fails at once.
    await mkdir(request.logDir, { recursive: true });
    const script = `#!/bin/sh\nexec ${request.command}\n`;
    const out = await command("sbatch", sbatchArgs(request), script);
    // --parsable prints "ID" or "ID;CLUSTER".
    const id = out.trim().split(";")[0];
    if (!/^\d+$/.test(id)) throw new DriverError(`sbatch: unexpected answer ${JSON.stringify(out.trim())}`);
    return id;
  }

  async list(pool: string): Promise<PilotStatus[]> {
    const out = await command("squeue", [
      "--noheader",
      `--name=${pilotJobName(pool)}`,
      "--format=%i|%T|%r",
      // All states squeue still holds, not only pending and running.
      "--states=all",
    ]);
    return parseSqueue(out);
  }

  async cancel(id: string): Promise<void> {
    try {
      await command("scancel", [id]);
    } catch (error) {
      // A job Slurm no longer knows is gone already.
      if (/Invalid job id|already completing or completed/i.test((error as Error).message)) return;
      throw error;
    }
  }
}
