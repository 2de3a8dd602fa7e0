// Every command of the `steward` program with its one-line description, and the module that defines
// it (src/entry/command-modules.ts loads them): what both the client's commands (src/cli/) and the
// daemons' (src/daemons/) take their descriptions from, and what `steward --help` lists without
// loading any command's module.

/** The modules of the commands: the daemons' (up, server, agent, config), the program's (completion), the client's. */
export type CommandModule =
  | "up"
  | "server"
  | "agent"
  | "config"
  | "completion"
  | "submit"
  | "run"
  | "ps"
  | "status"
  | "show"
  | "acct"
  | "share"
  | "logs"
  | "wait"
  | "control"
  | "update"
  | "fetch"
  | "hosts"
  | "explain"
  | "pools"
  | "tokens"
  | "secret"
  | "admin";

export interface CommandEntry {
  name: string;
  description: string;
  module: CommandModule;
}

/** In the order `steward --help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "up",
    module: "up",
    description: "run the server and N local agents in one process, on an embedded SQLite store",
  },
  { name: "server", module: "server", description: "run the broker alone (agents connect to it)" },
  { name: "agent", module: "agent", description: "run one host's agent" },
  {
    name: "config",
    module: "config",
    description:
      "print the settings steward server, agent or up would run with (config file, STEWARD_* variables, defaults) as YAML, secrets redacted",
  },
  {
    name: "submit",
    module: "submit",
    description:
      "submit a job file (YAML or JSON; - reads standard input); prints the job id (--dry-run: check and explain it, make nothing); a workflow file (jobs:) makes all its jobs at once and prints the workflow's id (--dry-run: check and explain each job)",
  },
  {
    name: "run",
    module: "run",
    description:
      "run a command as a job: wait, stream its output, exit with its exit code (Ctrl-C cancels it; --detach prints the id)",
  },
  {
    name: "ps",
    module: "ps",
    description: "list jobs (those not ended, unless --all); --workflows: workflows (flow-N) instead",
  },
  {
    name: "status",
    module: "status",
    description:
      "each job's state as a word, one line per id (ID STATE), all in one request: for workflow engines and scripts that poll; --format snakemake: Snakemake's --cluster-status (success, failed, running); exit 1 when a job does not exist, 3 when the server cannot be asked",
  },
  {
    name: "show",
    module: "show",
    description:
      "one job with its tasks, attempts and events; flow-N: a workflow's graph with each job's state",
  },
  {
    name: "acct",
    module: "acct",
    description:
      "ended attempts with what they used (CPU time, peak memory, wall time, exit), also of removed jobs, like sacct",
  },
  {
    name: "share",
    module: "share",
    description:
      "the fair-share tree, like sshare: each account's and user's shares, decayed usage and factor (a user sees their own line)",
  },
  {
    name: "logs",
    module: "logs",
    description:
      "stdout (or stderr) of a task's latest attempt (-f: followed across attempts); flow-N: each job's, prefixed by its name",
  },
  {
    name: "wait",
    module: "wait",
    description:
      "wait for jobs (or flow-N: a workflow's jobs) to end, then one line per job on stderr: exit 0 if all succeeded, 1 if any failed or was cancelled, 2 on timeout, 3 on error",
  },
  {
    name: "cancel",
    module: "control",
    description:
      "cancel jobs (several in one request; --quiet for scripts), some of a job's tasks (--tasks 3,7-9), or a workflow (flow-N): pending tasks never start, running attempts are stopped",
  },
  {
    name: "retry",
    module: "control",
    description:
      "give failed or cancelled tasks of a job new attempts with a fresh retry budget (--failed: failed only; --tasks 3,7-9); flow-N: rerun a workflow's failed jobs and those cancelled for them",
  },
  {
    name: "hold",
    module: "control",
    description:
      "hold a job (or flow-N: a workflow's jobs): it does not start; running attempts stop and it resumes on release (--reason TEXT: kept in its events)",
  },
  {
    name: "release",
    module: "control",
    description: "release a held job (or flow-N: a workflow's held jobs); one not held is an error (exit 1)",
  },
  {
    name: "migrate",
    module: "control",
    description: "move a running job to another host (or the one named), resuming from its checkpoint",
  },
  {
    name: "update",
    module: "update",
    description:
      "change a job that has not started: its priority, requirements, rank, cpus, memory or time limit, checked as at submit; flow-N: each of a workflow's jobs that has not started",
  },
  {
    name: "rm",
    module: "control",
    description:
      "remove ended jobs with their files and checkpoints: by id, a workflow's all at once (flow-N), or all that ended before --older-than (their attempts stay in steward acct)",
  },
  {
    name: "fetch",
    module: "fetch",
    description:
      "download a job's output files: DIR/<path> for a single job, DIR/<task>/<path> for an array; flow-N: each succeeded job's under DIR/<job name>/",
  },
  {
    name: "hosts",
    module: "hosts",
    description: "hosts with their facts and state; hosts rm HOST forgets a lost or disconnected host",
  },
  {
    name: "drain",
    module: "hosts",
    description: "let a host finish its work and take no more (--wait: until its tasks have ended or moved)",
  },
  { name: "undrain", module: "hosts", description: "let a draining host take work again" },
  {
    name: "explain",
    module: "explain",
    description:
      "why a job is not running: held, dependencies, back-off, whom it waits behind, then host by host (the requirements clause by clause); flow-N: each of a workflow's jobs",
  },
  {
    name: "pools",
    module: "pools",
    description: "pools backed by a batch system, with their state and pilots",
  },
  {
    name: "token",
    module: "tokens",
    description: "API tokens: each speaks for a user with a role (admin only)",
  },
  { name: "join-token", module: "tokens", description: "join tokens for agents, per pool (admin only)" },
  {
    name: "whoami",
    module: "tokens",
    description: "the user and role of the token this command uses (STEWARD_TOKEN)",
  },
  {
    name: "secret",
    module: "secret",
    description:
      "your secrets: S3 credentials your jobs name by `credentials` on an s3: input or output (set NAME reads the value from standard input or --from-env; list; rm NAME); never shown again",
  },
  {
    name: "admin",
    module: "admin",
    description: "administer the server: admin backup FILE writes a consistent backup (admin only)",
  },
  {
    name: "completion",
    module: "completion",
    description:
      "print a shell completion script (bash, zsh or fish): commands, options, job ids and workflow ids",
  },
];

/** A command's description, from the table. */
export function describe(name: string): string {
  const entry = COMMANDS.find((each) => each.name === name);
  if (!entry) throw new Error(`no command ${name} in src/common/command-line/commands.ts`);
  return entry.description;
}
