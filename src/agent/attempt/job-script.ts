// job.sh: the attempt's command with its environment (the STEWARD_* variables, `env`), run by the
// supervisor in a session of its own. A string command runs through /bin/sh -c; a list is exec'd.
// The environment is never on a command line (/proc/PID/cmdline is anyone's to read): job.sh
// exports it, or, for a job run as another account, a file beside it does (jobEnvironmentFile).

import { join } from "node:path";
import type { StartMessage } from "../../common/protocol/messages.ts";
import type { JobUser } from "../accounts/run-as.ts";
import type { JobExec } from "../launcher/launcher.ts";
import { shellFreeWords } from "./simple-command.ts";

/** The job SDK (plain JavaScript, any Node.js): jobs import it from $STEWARD_SDK. */
export const SDK_PATH = join(import.meta.dirname, "..", "..", "common", "sdk", "index.js");
/**
 * The Python package `steward` (standard library only) is in this folder: it leads the job's
 * PYTHONPATH, so that `import steward` works in a job on any host with no install, in the version
 * that speaks this agent's file protocol.
 */
export const PYTHON_SDK_PATH = join(import.meta.dirname, "..", "..", "..", "python");

export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

export interface JobPaths {
  /** The attempt's own working folder (run/): the job's, unless it runs in place (`workdir`). */
  runDir: string;
  /**
   * The folder the job runs in instead of runDir (the job file's `workdir`, in a folder the host
   * shares); for a job of another account, entered as that account, never as root.
   */
  workdir?: string;
  checkpointDir: string;
  progressFile: string;
  /** Where the job may write new requirements (CEL) for itself: self-migration. */
  requirementsFile: string;
  hostName: string;
  /** A rank's nodes file (multi-node jobs). */
  nodesFile?: string;
  /** The account the job runs as (--run-as, --run-as-owner); absent: the agent's own. */
  user?: JobUser | null;
  /** The umask the job starts with; absent: the supervisor's (the agent's). */
  umask?: number;
  /** Where the environment of a job run as another account is (jobEnvironmentFile): root's, 0600. */
  environmentFile?: string;
  /** Shell lines that put the job's shell in the attempt's cgroup (attempt-cgroup.ts), run first. */
  cgroupJoin?: string;
}

/**
 * The job's PYTHONPATH: the Python SDK's folder first, then the job's own PYTHONPATH (from its job
 * file's env, else the one it would inherit).
 */
function jobPythonPath(own: string | undefined): string {
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
    ...countableEnvironment(spec),
  };
}

/**
 * The devices and units given to the attempt: its GPUs in CUDA_VISIBLE_DEVICES and STEWARD_GPUS
 * (set over the job's own env), each countable resource's units in STEWARD_RESOURCE_<NAME>.
 */
export function countableEnvironment(spec: Pick<StartMessage, "gpus" | "resources">): Record<string, string> {
  const environment: Record<string, string> = {};
  if (spec.gpus && spec.gpus.length > 0) {
    environment.CUDA_VISIBLE_DEVICES = spec.gpus.join(",");
    environment.STEWARD_GPUS = spec.gpus.join(",");
  }
  for (const [name, units] of Object.entries(spec.resources ?? {}))
    environment[`STEWARD_RESOURCE_${name.toUpperCase()}`] = String(units);
  return environment;
}

/**
 * The environment, its names checked: the server checks them at submit; a name is not quoted in
 * an `export` line (nor may it hold `=` for launcher.pl), so it is checked again here.
 */
function checkedNames(environment: Record<string, string>): Record<string, string> {
  for (const name of Object.keys(environment))
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new Error(`not a valid variable name in the job's env: ${name}`);
  return environment;
}

/** `export NAME='value'` lines, for a shell to run. */
function exports(environment: Record<string, string>): string {
  return Object.entries(checkedNames(environment))
    .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
    .join("");
}

/**
 * The environment of a job run as another account, as `export` lines: the job's `env`, the
 * STEWARD_* variables and the account's HOME, USER and LOGNAME. Kept in a file of root's that
 * only root reads (mode 0600), which job.sh opens for the job to read (jobScript).
 */
export function jobEnvironmentFile(spec: StartMessage, paths: JobPaths): string {
  const account = paths.user?.account;
  return exports({
    ...jobEnvironment(spec, paths),
    ...(account ? { HOME: account.home, USER: account.name, LOGNAME: account.name } : {}),
  });
}

/**
 * What the job's account runs first, under setpriv: it reads its environment from descriptor 3
 * (the environment file, opened by root: the account could not open it), closes it, and execs the
 * command. Its own command line holds none of the environment.
 */
const TAKE_ENVIRONMENT =
  'environment=$(cat <&3) || exit 126; exec 3<&-; eval "$environment" || exit 126; unset environment; exec setsid "$@"';

/** The same, for a job run in place: first, as the account, into its working folder (`$1`). */
const ENTER_AND_TAKE_ENVIRONMENT = `cd -- "$1" || exit 126; shift; ${TAKE_ENVIRONMENT}`;

/**
 * The job's command as the argv it is exec'd with: a string runs through `/bin/sh -c`, unless the
 * shell would only split it into words and run them (simple-command.ts).
 */
function jobArgv(spec: StartMessage): string[] {
  if (typeof spec.command !== "string") return spec.command;
  return shellFreeWords(spec.command) ?? ["/bin/sh", "-c", spec.command];
}

/**
 * How launcher.pl starts a job of the agent's own account: what job.sh does for the shell
 * launcher, as data (its cgroups joined first, then its run folder, umask and environment).
 */
export function jobExec(spec: StartMessage, paths: JobPaths, cgroupProcs: readonly string[]): JobExec {
  const argv = jobArgv(spec);
  // The server refuses them at submit; launcher.pl's fields end at one.
  const words = [...argv, ...Object.values(spec.env)];
  if (words.some((word) => word.includes("\0"))) throw new Error("the job's command or env holds a NUL byte");
  return {
    cwd: paths.workdir ?? paths.runDir,
    ...(paths.umask !== undefined ? { umask: paths.umask } : {}),
    cgroupProcs,
    env: checkedNames(jobEnvironment(spec, paths, process.env)),
    argv,
  };
}

export function jobScript(spec: StartMessage, paths: JobPaths): string {
  const user = paths.user;
  // A job of another account starts in its attempt's run/, root's shell going no further: its
  // working folder, when it runs in place, is entered as the account (ENTER_AND_TAKE_ENVIRONMENT).
  const start = user ? paths.runDir : (paths.workdir ?? paths.runDir);
  const lines = [`cd ${shellQuote(start)} || exit 126`];
  if (paths.cgroupJoin) lines.unshift(paths.cgroupJoin.trimEnd());
  // The agent makes its own files with umask 077; the job gets the umask the agent was started
  // with, as if run by hand (and setpriv keeps it for a job of another account).
  if (paths.umask !== undefined) lines.push(`umask ${paths.umask.toString(8).padStart(4, "0")}`);
  const argv = jobArgv(spec);
  if (!user) {
    // Sourced by the supervisor's subshell: setsid gives the job a session and process group of
    // its own.
    return `${lines.join("\n")}\n${exports(jobEnvironment(spec, paths, process.env))}exec setsid ${argv.map(shellQuote).join(" ")}\n`;
  }
  // Nothing of the job's runs as root, its environment neither (PATH, LD_PRELOAD): setpriv, by the
  // full path the agent found, drops to the account, groups included, with a fresh environment
  // (the account's HOME, SHELL, USER, LOGNAME and PATH, none of the agent's variables such as
  // STEWARD_JOIN_TOKEN); a shell run as the account then takes the job's from the environment
  // file, on descriptor 3, not from a command line other accounts could read.
  if (!paths.environmentFile) throw new Error("a job run as another account needs its environment file");
  const { account } = user;
  const groups = account.groups.length ? `--groups=${account.groups.join(",")}` : "--clear-groups";
  const take = (
    paths.workdir === undefined
      ? ["/bin/sh", "-c", TAKE_ENVIRONMENT, "steward-job", ...argv]
      : ["/bin/sh", "-c", ENTER_AND_TAKE_ENVIRONMENT, "steward-job", paths.workdir, ...argv]
  )
    .map(shellQuote)
    .join(" ");
  lines.push(
    `exec ${shellQuote(user.setpriv)} --reuid=${account.uid} --regid=${account.gid} ${groups} --reset-env -- ${take} 3<${shellQuote(paths.environmentFile)}`,
  );
  return `${lines.join("\n")}\n`;
}
