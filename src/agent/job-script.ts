// job.sh: the attempt's command with its environment (DESIGN.md "What a job sees"), run by the
// supervisor in a session of its own. A string command runs through /bin/sh -c; a list is exec'd.

import { join } from "node:path";
import type { StartMessage } from "../protocol/messages.ts";

/** The job SDK (plain JavaScript, any Node.js): jobs import it from $STEWARD_SDK. */
export const SDK_PATH = join(import.meta.dirname, "..", "sdk", "index.js");

export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

export interface JobPaths {
  runDir: string;
  checkpointDir: string;
  progressFile: string;
  /** Where the job may write new requirements (CEL) for itself: self-migration. */
  requirementsFile: string;
  hostName: string;
  /** A rank's nodes file (multi-node jobs). */
  nodesFile?: string;
}

export function jobEnvironment(spec: StartMessage, paths: JobPaths): Record<string, string> {
  return {
    ...spec.env,
    STEWARD_JOB_ID: spec.jobId,
    STEWARD_TASK_INDEX: String(spec.taskIndex),
    STEWARD_ATTEMPT: String(spec.attempt),
    STEWARD_RESTARTED: spec.restarted ? "1" : "0",
    STEWARD_CHECKPOINT_DIR: paths.checkpointDir,
    STEWARD_PROGRESS_FILE: paths.progressFile,
    STEWARD_REQUIREMENTS_FILE: paths.requirementsFile,
    STEWARD_HOST: paths.hostName,
    STEWARD_SDK: SDK_PATH,
    ...(spec.gang
      ? {
          STEWARD_NODE_RANK: String(spec.gang.rank),
          STEWARD_NODE_COUNT: String(spec.gang.nodes.length),
          STEWARD_NODES_FILE: paths.nodesFile ?? "",
          STEWARD_COORDINATOR: spec.gang.coordinator ?? "",
        }
      : {}),
  };
}

export function jobScript(spec: StartMessage, paths: JobPaths): string {
  const lines = [`cd ${shellQuote(paths.runDir)} || exit 126`];
  for (const [name, value] of Object.entries(jobEnvironment(spec, paths))) {
    lines.push(`export ${name}=${shellQuote(value)}`);
  }
  const argv = typeof spec.command === "string" ? ["/bin/sh", "-c", spec.command] : spec.command;
  // Sourced by the supervisor's subshell: setsid gives the job a session and process group of its own.
  lines.push(`exec setsid ${argv.map(shellQuote).join(" ")}`);
  return `${lines.join("\n")}\n`;
}
