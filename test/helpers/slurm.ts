// The Slurm cluster of the tests (scripts/slurm-local.sh starts a one-node one): run its commands, say
// whether it is there, so that a file can skip its Slurm tests (or fail them under CI=true), and follow a
// job to its end through `scontrol show job` (there is no slurmdbd, so no sacct).

import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { test } from "vitest";
import type { PilotOwner } from "../../src/broker/drivers/driver.ts";
import { pilotHostName } from "../../src/broker/pools/pilot-command.ts";
import { pilotJobName } from "../../src/broker/pools/pool-token.ts";
import { waitFor } from "./steward.ts";

const run = promisify(execFile);

/** Runs a Slurm command and answers its stdout; rejects with its stderr when it fails. */
export async function slurm(command: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(command, args, { timeout: 10_000 });
    return stdout;
  } catch (error) {
    // scontrol writes some failures (e.g. "Slurmctld(primary) at vm is DOWN") to stdout.
    const failed = error as Error & { stderr?: string; stdout?: string };
    const detail = failed.stderr?.trim() || failed.stdout?.trim() || failed.message;
    throw new Error(`${command} ${args.join(" ")}: ${detail}`);
  }
}

/** Node states in which a node runs jobs (sinfo's %T, without a trailing flag such as `*`). */
export const NODE_UP_STATES = ["idle", "mixed", "allocated", "completing"];

/** Job states after which a job does not run again (`scontrol show job`'s JobState). */
export const JOB_END_STATES = [
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "TIMEOUT",
  "NODE_FAIL",
  "OUT_OF_MEMORY",
  "BOOT_FAIL",
  "DEADLINE",
  "PREEMPTED",
];

/**
 * Whether the Slurm tests must run: under CI (`.ci/run` starts the cluster) or when STEWARD_SLURM=1
 * says it is up. Otherwise a missing cluster skips them with a message.
 */
export const slurmRequired = Boolean(process.env.CI || process.env.STEWARD_SLURM);

/**
 * Defines a file's Slurm tests: they run when the test cluster answers; without it they fail under
 * CI or STEWARD_SLURM=1 (the cluster should be up there) and skip with a message otherwise.
 */
export function slurmTests(what: string, unavailable: string | null, define: () => void): void {
  if (unavailable && slurmRequired) {
    test("Slurm is available", () => {
      throw new Error(`no Slurm cluster (run scripts/slurm-local.sh): ${unavailable}`);
    });
    return;
  }
  if (unavailable) {
    console.warn(`skipping ${what} (start a cluster with bash scripts/slurm-local.sh): ${unavailable}`);
    test.skip(`${what}: ${unavailable}`, () => {});
    return;
  }
  define();
}

/** Null when sbatch is installed and the controller answers, otherwise why not. */
export async function slurmUnavailable(): Promise<string | null> {
  try {
    await slurm("sbatch", ["--version"]);
  } catch (error) {
    return `no sbatch on PATH (${(error as Error).message})`;
  }
  try {
    const ping = await slurm("scontrol", ["ping"]);
    return /\bUP\b/.test(ping) ? null : `slurmctld does not answer: ${ping.trim()}`;
  } catch (error) {
    return (error as Error).message;
  }
}

/** The states sinfo reports for the nodes, one per node line (e.g. ["idle"]). */
export async function nodeStates(): Promise<string[]> {
  const out = await slurm("sinfo", ["-h", "-o", "%T"]);
  return out
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

/** A job's fields as `scontrol show job -o` prints them (Key=Value pairs on one line). */
export async function showJob(id: string): Promise<Record<string, string>> {
  const out = await slurm("scontrol", ["show", "job", "-o", id]);
  const fields: Record<string, string> = {};
  for (const pair of out.trim().split(/\s+/)) {
    const at = pair.indexOf("=");
    if (at > 0) fields[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return fields;
}

/** Waits until the job ends and answers its fields; cancels it if it does not end in time. */
export async function waitForSlurmJobEnd(id: string, timeoutMs = 12_000): Promise<Record<string, string>> {
  let last = "unknown";
  try {
    return await waitFor(
      `Slurm job ${id} to end`,
      async () => {
        const job = await showJob(id);
        last = job.JobState ?? "unknown";
        return JOB_END_STATES.includes(last) ? job : null;
      },
      timeoutMs,
      200,
    );
  } catch (error) {
    await slurm("scancel", [id]).catch(() => undefined);
    throw new Error(`${(error as Error).message} (last JobState ${last}; cancelled)`);
  }
}

/** The pilots of `pool` under the broker of that join token, as the broker's own account (this process's) sees them. */
export function ownPilots(joinToken: string, pool: string): PilotOwner {
  return { jobName: pilotJobName(joinToken, pool), account: userInfo().username, runAs: [] };
}

/**
 * Removes the cgroups of the pool's pilots that ran from the server's data folder `data` (their
 * work folders, `pilots/POOL/work-JOBID`, name them): a pilot that Slurm killed (scancel, the
 * walltime) had no time to remove its own, and the machine keeps them.
 */
export async function removePilotCgroups(data: string, pool: string): Promise<void> {
  const dir = join(data, "pilots", pool);
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  const { removeAgentCgroups } = await import("./agent-cgroups.ts");
  for (const entry of entries)
    if (entry.startsWith("work-"))
      await removeAgentCgroups(pilotHostName(pool, entry.slice("work-".length)), join(dir, entry));
}
