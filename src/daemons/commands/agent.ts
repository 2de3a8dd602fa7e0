import { readFileSync, statSync } from "node:fs";
import os from "node:os";
import { type Command, Option } from "commander";
import { chooseRunAs, type RunAs, RunAsError } from "../../agent/accounts/run-as.ts";
import { Agent, LEAVING_REASON } from "../../agent/agent.ts";
import { DEFAULT_CACHE_GB } from "../../agent/cache/content-cache.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { integer, number } from "../../common/command-line/numbers.ts";
import { daemonLogger, logFormatOption } from "../logger.ts";
import { countableResources, endsAt, gpuSetting, labels, onShutdown, sharedFolder } from "../options.ts";
import { privateFolder, privateUmask, workFolderRole } from "../private-folder.ts";
import { configurable, settingRank } from "../settings.ts";
import { defaultWorkFolder, makeRootStateFolders } from "../work-folder.ts";

export function registerAgent(program: Command): void {
  const command = program
    .command("agent")
    .description(describe("agent"))
    // Not a required option: it may come from the config file or STEWARD_SERVER, after commander's check.
    .option("--server <urls>", "server URL, or a comma-separated list of servers (needed)")
    .option("--token <token>", "the servers' join token (shows in the process list: prefer --token-file)")
    .option("--token-file <file>", "read the join token from this file (or set STEWARD_JOIN_TOKEN)")
    // Defaults that depend on the machine say so in words: the reference docs are the same everywhere.
    .addOption(new Option("--name <name>", "host name").default(os.hostname(), "this host's name"))
    .option("--pool <pool>", "pool name", "default")
    .addOption(
      new Option("--slots <n>", "cpus to offer")
        .argParser(integer("--slots", 1))
        .default(os.availableParallelism(), "this host's cpus"),
    )
    .option(
      "--work <dir>",
      "work folder for attempts, the agent's account's alone (default: /var/lib/steward/agent/NAME for root, else $XDG_STATE_HOME/steward/agent/NAME, ~/.local/state without it)",
    )
    .option("--label <k=v>", "a label (repeatable)", labels, {})
    .option(
      "--gpus <ids>",
      "GPUs to offer jobs: auto (found by nvidia-smi -L, else /dev/nvidiaN), or device indexes (0,1,3)",
      gpuSetting,
    )
    .option(
      "--resource <name=n>",
      "units of a countable resource to offer jobs (license=4; repeatable)",
      countableResources,
      {},
    )
    .option(
      "--cache-gb <n>",
      "capacity of the host's content cache of inputs (uploaded and URL), GiB, in the work folder's cache/; least recently used out first; 0 turns it off (every task fetches its own copy of each input)",
      number("--cache-gb"),
      DEFAULT_CACHE_GB,
    )
    .option(
      "--min-free-disk-mb <n>",
      "the work folder counts as full below this much free space, MiB: the host takes no new work until space is freed (default: 256, or 1 % of a file system smaller than 25.6 GiB)",
      number("--min-free-disk-mb"),
    )
    .option(
      "--shared <path>",
      "a folder this host shares with the others (absolute; it must be there): jobs with a workdir in it may run here, in place (repeatable)",
      sharedFolder,
      [],
    )
    .option(
      "--container-runtime <path>",
      "the OCI runtime jobs with a container run with (runc; default: runc on PATH). Without one, such jobs do not come here (docs/containers.md)",
    )
    .option("--speed <x>", "speed score instead of the measured one", number("--speed"))
    .addOption(logFormatOption())
    .option("--ca <file>", "trust this PEM certificate authority for the server's TLS (or STEWARD_CA)")
    .option(
      "--address <address>",
      "where other hosts reach this one (multi-node jobs; default: first external IPv4)",
    )
    .option(
      "--run-as <user>",
      "run every job as this local account (needs root; an agent run as root with neither flag runs jobs as root)",
    )
    .option(
      "--run-as-owner",
      "run each job as the local account named like its owner; a job whose owner has none fails (needs root)",
    )
    .option(
      "--run-as-min-uid <n>",
      "the lowest uid --run-as or --run-as-owner runs jobs as (default: UID_MIN of /etc/login.defs, else 1000)",
      integer("--run-as-min-uid"),
    )
    .option(
      "--no-enforce",
      "do not enforce jobs' memory, CPU and process limits with cgroups (enforced by default where the host allows)",
    )
    .option("--idle-seconds <s>", "leave after this long with no attempt (pilots)", number("--idle-seconds"))
    .option(
      "--ends-at <time>",
      "a pilot's walltime end (ISO-8601 or seconds since the epoch): the server moves its work away " +
        "before it, and on SIGTERM its tasks migrate with their checkpoints",
      endsAt,
    );
  // The agent's --token is the join token: STEWARD_JOIN_TOKEN, as it always was (STEWARD_TOKEN is the CLI's).
  configurable(command, {
    env: { token: "STEWARD_JOIN_TOKEN" },
    repeatable: ["label", "resource", "shared"],
  }).action(async (options) => {
    if (!options.server)
      throw new CliError("--server is needed (or server: in the --config file, or STEWARD_SERVER)", 2);
    // --token and --token-file are one setting: the one from the stronger place wins (a
    // --token-file flag over STEWARD_JOIN_TOKEN, STEWARD_JOIN_TOKEN over the file's token-file).
    if (
      settingRank(command.getOptionValueSource("tokenFile")) >
      settingRank(command.getOptionValueSource("token"))
    )
      options.token = undefined;
    let runAs: RunAs;
    try {
      runAs = await chooseRunAs({
        runAs: options.runAs,
        runAsOwner: options.runAsOwner,
        runAsMinUid: options.runAsMinUid,
      });
    } catch (error) {
      if (error instanceof RunAsError) throw new CliError(error.message, 2);
      throw error;
    }
    const joinToken = joinTokenOf(options);
    // What the agent makes in its work folder is its account's alone; jobs get the umask the
    // agent was started with back (job-script.ts), as if run by hand.
    const jobUmask = privateUmask();
    const uid = process.geteuid?.() ?? 0;
    let workDir: string = options.work;
    if (workDir === undefined) {
      workDir = defaultWorkFolder(options.name, { uid, env: process.env, home: os.homedir() });
      if (uid === 0) makeRootStateFolders();
    }
    const work = privateFolder(workDir, workFolderRole(runAs.kind !== "self"));
    const log = daemonLogger(options.logFormat);
    if (work.tightened) log.warn(work.tightened);
    if (runAs.kind !== "self")
      for (const warning of tokenWarnings({
        // Only a --token flag shows in the process list (STEWARD_JOIN_TOKEN or the file's does not).
        token: command.getOptionValueSource("token") === "cli" ? options.token : undefined,
        tokenFile: options.tokenFile,
      }))
        log.warn(warning);
    const agent = new Agent({
      runAs,
      servers: String(options.server)
        .split(",")
        .map((url) => url.trim())
        .filter(Boolean),
      joinToken,
      name: options.name,
      pool: options.pool,
      slots: options.slots,
      workDir: work.path,
      jobUmask,
      enforce: options.enforce !== false,
      labels: options.label,
      gpus: options.gpus,
      resources: options.resource,
      shared: options.shared,
      containerRuntime: options.containerRuntime,
      cacheGb: options.cacheGb,
      minFreeDiskMb: options.minFreeDiskMb,
      speed: options.speed,
      log,
      idleSeconds: options.idleSeconds,
      endsAt: options.endsAt,
      address: options.address,
      onIdle: () => {
        process.stderr.write("steward agent: idle, leaving\n");
        process.exit(0);
      },
      onRejected: (reason) => {
        process.stderr.write(`steward agent: the server refused this agent: ${reason}\n`);
        process.exit(3);
      },
      onIncompatible: (message) => {
        process.stderr.write(`steward agent: ${message}\n`);
        process.exit(3);
      },
    });
    try {
      await agent.start();
    } catch (error) {
      if (error instanceof RunAsError) throw new CliError(error.message, 2);
      throw error;
    }
    // A pilot's SIGTERM comes from its batch system (scancel, the walltime): its tasks will not
    // survive the allocation, so they move now. Other agents leave their tasks running on SIGTERM.
    onShutdown(() => (options.endsAt === undefined ? agent.stop() : agent.leave(LEAVING_REASON)));
  });
}

/** Where jobs of other accounts could read the join token: --token (the process list), a token file others may read. */
function tokenWarnings(options: { token?: string; tokenFile?: string }): string[] {
  if (options.token)
    return [
      "--token shows in the process list, where jobs of other accounts read it: give it as --token-file FILE (mode 0600) or STEWARD_JOIN_TOKEN",
    ];
  if (!options.tokenFile) return [];
  const mode = statSync(options.tokenFile, { throwIfNoEntry: false })?.mode ?? 0;
  return mode & 0o077
    ? [
        `--token-file ${options.tokenFile} has mode 0${(mode & 0o777).toString(8)}: jobs of other accounts may read the join token; chmod 600 it`,
      ]
    : [];
}

/** The join token: --token, else --token-file, else STEWARD_JOIN_TOKEN; one of them is needed. */
function joinTokenOf(options: { token?: string; tokenFile?: string }): string {
  if (options.token) return options.token;
  if (options.tokenFile) {
    let text: string;
    try {
      text = readFileSync(options.tokenFile, "utf8");
    } catch (error) {
      throw new CliError(`--token-file ${options.tokenFile}: ${(error as Error).message}`, 2);
    }
    const token = text.trim();
    if (!token) throw new CliError(`--token-file ${options.tokenFile} is empty`, 2);
    return token;
  }
  const fromEnv = process.env.STEWARD_JOIN_TOKEN?.trim();
  if (fromEnv) return fromEnv;
  throw new CliError("a join token is needed: --token-file FILE, STEWARD_JOIN_TOKEN, or --token", 2);
}
