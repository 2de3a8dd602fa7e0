// Pilots through Slurm's own commands: sbatch to submit, squeue to list, scancel to cancel, each
// run as the pool's account. A pool's pilots are the jobs of that account (squeue --user) under a
// name unique to the broker and the pool; scancel names the account too, so a job of another
// account is never cancelled. The commands get a short environment of their own: sbatch exports
// its environment to the pilot, and the broker's (STEWARD_TOKEN, database passwords) is not the
// pilot's business.

import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  type BatchDriver,
  DriverError,
  type PilotOwner,
  type PilotRequest,
  type PilotStatus,
} from "./driver.ts";

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
    `--job-name=${request.owner.jobName}`,
    `--cpus-per-task=${request.cpus}`,
    "--ntasks=1",
    `--time=${slurmTime(request.walltimeSeconds)}`,
    `--chdir=${request.logDir}`,
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

/** What the broker's environment passes to Slurm's commands (and so, through sbatch, to its pilots). */
const PASSED_ENV = [
  "PATH",
  "LANG",
  "LC_ALL",
  "TZ",
  "SLURM_CONF",
  "STEWARD_CA",
  "STEWARD_LOG_LEVEL",
  "STEWARD_LOG_FORMAT",
  "STEWARD_COMPILE_CACHE",
  "STEWARD_DAEMON_FLAGS",
];

export function batchEnv(from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of PASSED_ENV) {
    const value = from[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Runs a Slurm command as the owner's account. */
async function command(owner: PilotOwner, name: string, args: string[], input?: string): Promise<string> {
  try {
    const [program, ...rest] = [...owner.runAs, name, ...args];
    const child = run(program, rest, { timeout: SLURM_COMMAND_TIMEOUT_MS, env: batchEnv() });
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
    // The pilot's folder is made beforehand, by its account (pools/pilot-files.ts).
    const script = `#!/bin/sh\nexec ${request.command}\n`;
    const out = await command(request.owner, "sbatch", sbatchArgs(request), script);
    // --parsable prints "ID" or "ID;CLUSTER".
    const id = out.trim().split(";")[0];
    if (!/^\d+$/.test(id)) throw new DriverError(`sbatch: unexpected answer ${JSON.stringify(out.trim())}`);
    return id;
  }

  async list(owner: PilotOwner): Promise<PilotStatus[]> {
    const out = await command(owner, "squeue", [
      "--noheader",
      `--user=${owner.account}`,
      `--name=${owner.jobName}`,
      "--format=%i|%T|%r",
      // All states squeue still holds, not only pending and running.
      "--states=all",
    ]);
    return parseSqueue(out);
  }

  async cancel(id: string, owner: PilotOwner): Promise<void> {
    if (!/^\d+$/.test(id)) throw new DriverError(`scancel: ${JSON.stringify(id)} is no Slurm job id`);
    try {
      // --user: Slurm cancels the job only if it is the account's (and the account may cancel no other).
      await command(owner, "scancel", [`--user=${owner.account}`, id]);
    } catch (error) {
      // A job Slurm no longer knows is gone already.
      if (/Invalid job id|already completing or completed/i.test((error as Error).message)) return;
      throw error;
    }
  }
}
