import type { Command } from "commander";
import { startServer } from "../../server/server.ts";
import { CliError } from "../client.ts";
import { openDataDir, serverOptions } from "../data-dir.ts";
import { daemonLogger } from "../logger.ts";
import { number, onShutdown } from "../options.ts";

export function registerServer(program: Command): void {
  program
    .command("server")
    .description("run the broker alone (agents connect to it)")
    .option("--data <dir>", "data folder: SQLite database, files, tokens", ".steward")
    .option("--store <url>", "postgres://... for a PostgreSQL store")
    .option("--host <address>", "address to listen on", "127.0.0.1")
    .option("--port <n>", "port", number("--port"), 4780)
    .option("--token <token>", "admin token (default: generated and kept in the data folder)")
    .option("--join-token <token>", "token agents present (default: generated and kept in the data folder)")
    .option("--heartbeat-seconds <s>", "agent heartbeat interval", number("--heartbeat-seconds"), 2)
    .option(
      "--host-timeout-seconds <s>",
      "a host silent this long is lost",
      number("--host-timeout-seconds"),
      10,
    )
    .action(async (options) => {
      if (options.store)
        throw new CliError("the PostgreSQL store is not available yet; use --data for SQLite");
      const data = openDataDir(options.data, { admin: options.token, join: options.joinToken });
      const log = daemonLogger();
      const server = await startServer(serverOptions(data, options, log));
      process.stderr.write(
        `steward server at ${server.url}\n  admin token: ${data.root}/admin-token\n  join token:  ${data.root}/join-token\n`,
      );
      onShutdown(() => server.close());
    });
}
