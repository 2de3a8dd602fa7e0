// job.sh: the attempt's command with its environment (DESIGN.md "What a job sees"), run by the
// supervisor in a session of its own. A string command runs through /bin/sh -c; a list is exec'd.

import { join } from "node:path";
import type { StartMessage } from "../protocol/messages.ts";
import type { JobUser } from "./run-as.ts";

/** The job SDK (plain JavaScript, any Node.js): jobs import it from $STEWARD_SDK. */
export const SDK_PATH = join(import.meta.dirname, "..", "sdk", "index.js");
/**
 * The Python package `steward` (standard library only) is in this folder: it leads the job's
 * PYTHONPATH, so that `import steward` works in a job on any host with no install, in the version
 * that speaks this agent's file protocol.
 */
export const PYTHON_SDK_PATH = join(import.meta.dirname, "..", "..", "python");

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
  /** The account the job runs as (--run-as, --run-as-owner); absent: the agent's own. */
  user?: JobUser | null;
}

/**
 * The job's PYTHONPATH: the Python SDK's folder first, then the job's own PYTHONPATH (from its job
 * file's env, else the one it would inherit).
 */
export function jobPythonPath(own: string | undefined): string {
  return own ? `${PYTHON_SDK_PATH}:${own}` : PYTHON_SDK_PATH;
}

/**
 * The variables the agent gives the job. `inherited` is the environment the job would otherwise
 * get from the agent (none for a job run as another account, which starts from a fresh one).
 */
export function jobEnvironment(
  spec: StartMessage,
  paths: JobPaths,
  inherited: Record<string, string | undefined> = {},
): Record<string, string> {
  return {
    ...spec.env,
    PYTHONPATH: jobPythonPath(spec.env.PYTHONPATH ?? inherited.PYTHONPATH),
    STEWARD_PYTHONPATH: PYTHON_SDK_PATH,
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
  const argv = typeof spec.command === "string" ? ["/bin/sh", "-c", spec.command] : spec.command;
  const command = `setsid ${argv.map(shellQuote).join(" ")}`;
  const user = paths.user;
  if (!user) {
    // Sourced by the supervisor's subshell: setsid gives the job a session and process group of
    // its own.
    for (const [name, value] of Object.entries(jobEnvironment(spec, paths, process.env))) {
      lines.push(`export ${name}=${shellQuote(value)}`);
    }
    lines.push(`exec ${command}`);
    return `${lines.join("\n")}\n`;
  }
  // Nothing of the job's runs as root, its environment neither (PATH, LD_PRELOAD): setpriv, by the
  // full path the agent found, drops to the account, groups included, with a fresh environment
  // (the account's HOME, SHELL, USER, LOGNAME and PATH, none of the agent's variables such as
  // STEWARD_JOIN_TOKEN); env, run as the account, then adds the job's.
  const { account } = user;
  const environment = {
    ...jobEnvironment(spec, paths),
    HOME: account.home,
    USER: account.name,
    LOGNAME: account.name,
  };
  const groups = account.groups.length ? `--groups=${account.groups.join(",")}` : "--clear-groups";
  const assignments = Object.entries(environment).map(([name, value]) => shellQuote(`${name}=${value}`));
  lines.push(
    `exec ${shellQuote(user.setpriv)} --reuid=${account.uid} --regid=${account.gid} ${groups} --reset-env -- env -- ${assignments.join(" ")} ${command}`,
  );
  return `${lines.join("\n")}\n`;
}
