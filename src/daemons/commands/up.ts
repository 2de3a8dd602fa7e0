import os from "node:os";
import { join } from "node:path";
import { type Command, Option } from "commander";
import { Agent } from "../../agent/agent.ts";
import { DEFAULT_CACHE_GB } from "../../agent/cache/content-cache.ts";
import { installLastResortGuard } from "../../broker/api/last-resort.ts";
import { startServer } from "../../broker/server/server.ts";
import { describe } from "../../common/command-line/commands.ts";
import { integer, number } from "../../common/command-line/numbers.ts";
import { brokerFlags } from "../broker-flags.ts";
import { commandLineSecretWarnings } from "../command-line-secrets.ts";
import { openDataDir, serverOptions } from "../data-dir.ts";
import { fairShareOptions } from "../fair-share-flags.ts";
import { daemonLogger, logFormatOption } from "../logger.ts";
import { onShutdown, policyOptions, sharedFolder } from "../options.ts";
import { privateFolder, privateUmask, workFolderRole } from "../private-folder.ts";
import { configurable } from "../settings.ts";
import { readQosFile } from "./server.ts";

export function registerUp(program: Command): void {
  configurable(
    fairShareOptions(
      policyOptions(
        program
          .command("up")
          .description(describe("up"))
          .option("--data <dir>", "data folder", ".steward")
          .option("--port <n>", "port", integer("--port"), 4780)
          .option(
            "--advertise-url <url>",
            "the URL other hosts reach this server at (agents of other machines, redirects); default: http://127.0.0.1:PORT",
          )
          .option("--agents <n>", "local agents to start", integer("--agents", 0), 1)
          .addOption(
            // A default that depends on the machine says so in words: the reference docs are the same everywhere.
            new Option("--slots <n>", "slots (cpus) per agent")
              .argParser(integer("--slots", 1))
              .default(os.availableParallelism(), "this host's cpus"),
          )
          .option("--token <token>", "admin token (default: generated and kept in the data folder)")
          .addOption(logFormatOption())
          .addOption(brokerFlags.heartbeatSeconds())
          .addOption(brokerFlags.bodyTimeoutSeconds())
          .addOption(brokerFlags.maxLogMb())
          .option(
            "--no-enforce",
            "its agents do not enforce jobs' memory, CPU and process limits with cgroups (enforced by default where the host allows)",
          )
          .option(
            "--shared <path>",
            "a folder its agents share (absolute; it must be there): jobs with a workdir in it run there, in place (repeatable; as steward agent --shared)",
            sharedFolder,
            [],
          )
          .option(
            "--cache-gb <n>",
            "capacity of each agent's content cache of inputs, GiB, in its work folder's cache/; 0 turns it off (as steward agent --cache-gb)",
            number("--cache-gb"),
            DEFAULT_CACHE_GB,
          )
          .addOption(brokerFlags.accountingDays())
          .addOption(brokerFlags.metricsOpen())
          .option(
            "--qos <file>",
            "QoS tiers (YAML, as steward server --qos): priorities between users, preemption between tiers, quotas",
          )
          .addOption(brokerFlags.hostTimeoutSeconds()),
      ),
    ),
    // STEWARD_TOKEN is the command line's API token: the admin token has its own name.
    { env: { token: "STEWARD_ADMIN_TOKEN" }, repeatable: ["shared"] },
  ).action(async (options, command: Command) => {
    // The broker's files and its agents' are this account's alone; jobs get the umask `up` was
    // started with back (job-script.ts), as if run by hand.
    const jobUmask = privateUmask();
    const data = openDataDir(options.data, { admin: options.token });
    const log = daemonLogger(options.logFormat);
    installLastResortGuard(log);
    for (const notice of data.notices) log.warn(notice);
    for (const warning of commandLineSecretWarnings(command)) log.warn(warning);
    const qos = options.qos === undefined ? undefined : readQosFile(options.qos);
    const server = await startServer({ ...serverOptions(data, options, log), ...(qos ? { qos } : {}) });
    const agents: Agent[] = [];
    for (let i = 1; i <= options.agents; i++) {
      const name = `local-${i}`;
      const work = privateFolder(join(data.root, "agents", name), workFolderRole(false));
      if (work.tightened) log.warn(work.tightened);
      const agent = new Agent({
        // Its own agents reach it on this machine, whatever it advertises to others.
        servers: [server.localUrl],
        // Its messages go straight to the server's gateway, without a socket (the files still go by HTTP).
        localLink: server.localAgentLink,
        joinToken: data.joinToken,
        name,
        slots: options.slots,
        workDir: work.path,
        jobUmask,
        enforce: options.enforce !== false,
        shared: options.shared,
        cacheGb: options.cacheGb,
        log,
      });
      await agent.start();
      agents.push(agent);
    }
    process.stderr.write(
      `steward up at ${server.url} with ${options.agents} agent${options.agents === 1 ? "" : "s"} of ${options.slots} slots\n` +
        `  data: ${data.root}\n  export STEWARD_URL=${server.url} STEWARD_TOKEN=$(cat ${data.root}/admin-token)\n` +
        `  dashboard: ${server.url}/ (sign in with that token)\n`,
    );
    onShutdown(async () => {
      for (const agent of agents) await agent.stop();
      await server.close();
    });
  });
}
