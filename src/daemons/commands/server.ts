import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { installLastResortGuard } from "../../broker/api/last-resort.ts";
import { DEFAULT_SUBMIT_BURST, DEFAULT_SUBMIT_RATE } from "../../broker/api/rate-limit.ts";
import { DEFAULT_MAX_UPLOAD_MB } from "../../broker/api/upload-limit.ts";
import { restoreBackup } from "../../broker/backup/restore.ts";
import { PoolAccountError } from "../../broker/pools/pilot-account.ts";
import { startServer } from "../../broker/server/server.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { integer, number } from "../../common/command-line/numbers.ts";
import { type PoolSpec, PoolsFileError, parsePoolsFile } from "../../common/model/pools-file.ts";
import { parseQosFile, QosFileError, type QosPolicy } from "../../common/model/qos-file.ts";
import { brokerFlags } from "../broker-flags.ts";
import { commandLineSecretWarnings } from "../command-line-secrets.ts";
import { openDataDir, serverOptions } from "../data-dir.ts";
import { fairShareOptions } from "../fair-share-flags.ts";
import { readFlagFile } from "../flag-file.ts";
import { daemonLogger, logFormatOption } from "../logger.ts";
import { onShutdown, policyOptions } from "../options.ts";
import { privateUmask } from "../private-folder.ts";
import { redactSecrets } from "../redact-secrets.ts";
import { configurable } from "../settings.ts";

export function registerServer(program: Command): void {
  configurable(
    fairShareOptions(
      policyOptions(
        program
          .command("server")
          .description(describe("server"))
          .option(
            "--data <dir>",
            "data folder: tokens, SQLite database (unless --store), files (unless --store or --blobs)",
            ".steward",
          )
          .option(
            "--store <url>",
            "keep the records in PostgreSQL (postgres://USER@HOST:PORT/DB[?schema=NAME]) instead of SQLite; a URL with a password belongs in STEWARD_STORE or a 0600 --config file, not on the command line",
          )
          .option(
            "--blobs <dir>",
            "keep the files (inputs, outputs, logs, checkpoints) in DIR, on a file system every broker mounts (default: PostgreSQL with --store, else DATA/blobs)",
          )
          .option(
            "--restore <file>",
            "first unpack a backup (steward admin backup) into --data (and --blobs), which must be empty or absent; SQLite store only",
          )
          .option("--host <address>", "address to listen on", "127.0.0.1")
          .option(
            "--advertise-url <url>",
            "the URL other hosts reach this server at (redirects, leader record, pilots' --server); default: the --host address, or with 0.0.0.0 or :: the machine's host name",
          )
          .addOption(logFormatOption())
          .option(
            "--max-upload-mb <n>",
            "the largest file a request may bring (inputs, outputs, checkpoint files); larger ones get 413",
            integer("--max-upload-mb", 1),
            DEFAULT_MAX_UPLOAD_MB,
          )
          .addOption(brokerFlags.maxLogMb())
          .option(
            "--submit-rate <n>",
            "submits a second each user token may make, sustained (admin tokens are not limited); more get 429",
            number("--submit-rate"),
            DEFAULT_SUBMIT_RATE,
          )
          .option(
            "--submit-burst <n>",
            "submits a user token may make at once after a quiet spell",
            integer("--submit-burst", 1),
            DEFAULT_SUBMIT_BURST,
          )
          .addOption(brokerFlags.accountingDays())
          .addOption(brokerFlags.metricsOpen())
          .option("--tls-cert <file>", "serve HTTPS and WSS with this PEM certificate (chain)")
          .option("--tls-key <file>", "the PEM private key of --tls-cert")
          .option("--port <n>", "port", number("--port"), 4780)
          .option(
            "--token <token>",
            "admin token (default: generated and kept in the data folder); shows in the process list: prefer STEWARD_ADMIN_TOKEN",
          )
          .option(
            "--join-token <token>",
            "token agents present (default: generated and kept in the data folder); shows in the process list: prefer STEWARD_JOIN_TOKEN",
          )
          .addOption(brokerFlags.heartbeatSeconds())
          .addOption(brokerFlags.bodyTimeoutSeconds())
          .option(
            "--pools <file>",
            "pools backed by a batch system (YAML): the server keeps them supplied with pilots",
          )
          .option(
            "--qos <file>",
            "QoS tiers (YAML): each tier's priority between users, the tiers it may preempt, its limits per user; and groups' limits",
          )
          .option(
            "--lease-seconds <s>",
            "with --store: how long the leader's lease lasts unless renewed; a standby takes over after it",
            number("--lease-seconds"),
            2,
          )
          .addOption(brokerFlags.hostTimeoutSeconds()),
      ),
    ),
    // STEWARD_TOKEN is the command line's API token: the server's admin token has its own name.
    { env: { token: "STEWARD_ADMIN_TOKEN" } },
  )
    .addHelpText(
      "after",
      [
        "",
        "PostgreSQL store:",
        "  --store takes a URL as the pg driver reads it: its other parameters (sslmode, options, ...) go there.",
        "  ?schema=NAME puts Steward's tables in schema NAME, created if missing (default: the connection's",
        "  search_path, usually public). Several servers on one store apply schema migrations once.",
        "  The inputs, outputs, logs and checkpoints go there too, so every broker on the store reaches them;",
        "  --blobs DIR keeps them in DIR instead (a file system all brokers mount: large files, high",
        "  throughput). --data holds the tokens.",
        "  Several servers on one store elect a leader; the others are standby: they redirect API",
        "  requests to the leader (307) and turn agents away, and take over once its lease runs out.",
        "  example: steward server --store 'postgres://steward@db:5432/grid?schema=steward' --data /srv/steward",
        "  The password: in ~/.pgpass of the server's account, or PGPASSWORD, or in the URL given as",
        "  STEWARD_STORE (an environment file of mode 0600) or in a --config file of mode 0600; never on",
        "  the command line, where any local account reads it (the server warns). The same for --token",
        "  (STEWARD_ADMIN_TOKEN) and --join-token (STEWARD_JOIN_TOKEN).",
        "",
        "QoS file (--qos):",
        "  tiers: a map of tier names (it must have normal, the tier of jobs that name none), each with",
        "    priority (0; between users the higher tier goes first: a job's own priority orders its owner's",
        "    jobs only), preempt ([], tiers of a lower priority whose running jobs it may preempt), and",
        "    limits per user of the tier: maxRunningCpus, maxRunningGpus (jobs over them wait),",
        "    maxQueuedTasks, maxArrayTasks (a submit over them gets 429), maxWallSeconds (a longer",
        "    timeLimitSeconds is refused; a job with none gets it).",
        "  groups: a map of group names (a token's --group), each with maxRunningCpus, maxRunningGpus,",
        "    maxQueuedTasks, maxArrayTasks for the group's users together.",
        "  Without --qos there is one tier, normal: priority 0, preempts nothing, no limits.",
        "",
        "Pools file (--pools):",
        "  pools: a list; each pool has name, driver (slurm) and optionally partition, maxPilots (4),",
        "  backlog (2), slotsPerPilot (1), walltime (3600 s), idleSeconds (120), maxQueueWaitSeconds (300),",
        "  sbatchArgs ([]), and:",
        "    account: NAME             the local account its pilots run as (and every job on them); the",
        "                              broker runs sbatch, squeue and scancel as it (runuser as root,",
        "                              sudo -n otherwise); the broker's data and blobs folders must then be 0700.",
        "    allowBrokerAccount: true  let the pilots run as the broker's own account (no account, or the",
        "                              broker's): refused otherwise, since jobs on them could read the",
        "                              broker's data folder (admin token, database, files).",
        "    pilotDir: /PATH           the pilots' token file, logs and work folders (default:",
        "                              ~ACCOUNT/.steward-pilots/POOL, or DATA/pilots/POOL without account).",
        "    shared: [/PATH, ...]      folders the batch nodes share: each pilot's agent --shared, so jobs",
        "                              with a workdir in them run on its pilots (default none).",
        "",
        "Shares file (--shares), fair share by accounts (docs/scheduling.md):",
        "  accounts:",
        "    physics: {shares: 3, users: {alice: 1, bob: 1}, accounts: {theory: {shares: 1, users: {dave: 1}}}}",
        "    biology: {shares: 1, users: {carol: 1}}",
        "  A user named nowhere is one share under the account named as their group, else under the root.",
        "  The waiting user whose account, then whose own line, is furthest under its share goes first;",
        "  one who used nothing goes first. steward share prints the tree.",
      ].join("\n"),
    )
    .action(async (options, command: Command) => {
      if (options.store !== undefined && !/^postgres(ql)?:\/\//.test(options.store))
        throw new CliError(
          `--store needs a postgres:// or postgresql:// URL, not ${redactSecrets(options.store)}`,
        );
      // Everything the broker makes (database, blobs, tokens, pilots' logs) is its account's alone.
      privateUmask();
      if (options.restore !== undefined)
        await restoreInto(options.restore, options.data, options.blobs, options.store);
      const data = openDataDir(
        options.data,
        { admin: options.token, join: options.joinToken },
        options.store,
        options.blobs,
      );
      const pools = options.pools === undefined ? [] : readPoolsFile(options.pools);
      const qos = options.qos === undefined ? undefined : readQosFile(options.qos);
      const log = daemonLogger(options.logFormat);
      installLastResortGuard(log);
      for (const notice of data.notices) log.warn(notice);
      for (const warning of commandLineSecretWarnings(command)) log.warn(warning);
      const server = await startServer({
        ...serverOptions(data, options, log),
        pools,
        ...(qos ? { qos } : {}),
        pilotDir: join(data.root, "pilots"),
        privateDirs: [data.root, ...(data.blobsWhere.startsWith("/") ? [data.blobsWhere] : [])],
      }).catch((error: unknown) => {
        if (error instanceof PoolAccountError)
          throw new CliError(`--pools ${options.pools}: ${error.message}`);
        throw error;
      });
      process.stderr.write(
        `steward server at ${server.url}\n  admin token: ${data.root}/admin-token\n  join token:  ${data.root}/join-token\n`,
      );
      if (options.store) process.stderr.write(`  store:       ${redactSecrets(options.store)}\n`);
      process.stderr.write(`  blobs:       ${data.blobsWhere}\n`);
      onShutdown(async () => {
        await server.close();
        await data.close();
      });
    });
}

/** `--restore FILE`: unpacks the backup into the empty data folder (and --blobs folder) before the start. */
async function restoreInto(
  file: string,
  dataDir: string,
  blobsDir: string | undefined,
  storeUrl: string | undefined,
): Promise<void> {
  if (storeUrl !== undefined)
    throw new CliError(
      "--restore goes with the SQLite store, not --store: restore PostgreSQL with pg_restore",
    );
  if (!existsSync(file)) throw new CliError(`--restore ${file}: no such file`);
  const dataRoot = resolve(dataDir);
  const blobsRoot = blobsDir === undefined ? join(dataRoot, "blobs") : resolve(blobsDir);
  for (const [flag, folder] of [
    ["--data", dataRoot],
    ["--blobs", blobsRoot],
  ] as const) {
    if (existsSync(folder) && readdirSync(folder).length > 0)
      throw new CliError(`--restore needs an empty ${flag} folder, and ${folder} is not empty`);
  }
  mkdirSync(dataRoot, { recursive: true, mode: 0o700 });
  try {
    const restored = await restoreBackup(file, dataRoot, blobsRoot);
    process.stderr.write(
      `restored ${file} into ${dataRoot}: the database, ${restored.blobs} file${restored.blobs === 1 ? "" : "s"}, ${restored.bytes} bytes\n`,
    );
  } catch (error) {
    throw new CliError(
      `--restore ${file}: ${(error as Error).message} (remove what was unpacked in ${dataRoot} before trying again)`,
    );
  }
}

/** The QoS file, validated; a bad one stops the server with the line and the key named. */
export function readQosFile(path: string): QosPolicy {
  return readFlagFile("--qos", path, parseQosFile, QosFileError);
}

/** The pools file, validated; a bad one stops the server with the field named. */
function readPoolsFile(path: string): PoolSpec[] {
  return readFlagFile("--pools", path, parsePoolsFile, PoolsFileError);
}
