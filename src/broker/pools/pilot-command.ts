// The command a pool's pilot runs: the agent, in its pool, named after its batch job.

import { join } from "node:path";
import type { PoolSpec } from "../../common/model/pools-file.ts";
import { poolTokenFile } from "./pilot-files.ts";

/** A pilot's host name: its pool and its batch job id. */
export function pilotHostName(pool: string, jobId: string): string {
  return `${pool}-${jobId}`;
}

const quote = (text: string) => `'${text.replaceAll("'", `'"'"'`)}'`;

/** Where a pilot's agent comes from and reaches: the `steward` it runs, the server, its pool's folder. */
export interface PilotCommandContext {
  /** The `steward` executable a pilot runs. */
  steward: string;
  serverUrl: string;
  /** Its pool's pilots' folder: the token file, their logs and work folders. */
  dir: string;
}

/**
 * The agent a pilot runs: in its pool, with its slots, named after its batch job, leaving when
 * idle. The pool token is read from its file: a command line is in every process list.
 */
export function pilotCommand(spec: PoolSpec, { steward, serverUrl, dir }: PilotCommandContext): string {
  const work = join(dir, "work-");
  return [
    quote(steward),
    "agent",
    `--server ${quote(serverUrl)}`,
    `--token-file ${quote(poolTokenFile(dir))}`,
    `--pool ${quote(spec.name)}`,
    `--slots ${spec.slotsPerPilot}`,
    `--name ${quote(pilotHostName(spec.name, ""))}"$SLURM_JOB_ID"`,
    `--work ${quote(work)}"$SLURM_JOB_ID"`,
    `--idle-seconds ${spec.idleSeconds}`,
    // The folders the batch nodes share: jobs with a workdir in them run on its pilots.
    ...spec.shared.map((folder) => `--shared ${quote(folder)}`),
    // The walltime counts from the pilot's start: its agent knows when the batch system ends it.
    `--ends-at "$(date -u -d '+${spec.walltime} seconds' +%Y-%m-%dT%H:%M:%SZ)"`,
  ].join(" ");
}
