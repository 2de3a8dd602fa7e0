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
    .option("--data <dir>", "data folder: SQLite database (unless --store), files, tokens", ".steward")
    .option(
      "--store <url>",
      "keep the records in PostgreSQL (postgres://USER:PASSWORD@HOST:PORT/DB[?schema=NAME]) instead of SQLite",
    )
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
    .addHelpText(
      "after",
      [
        "",
        "PostgreSQL store:",
        "  --store takes a URL as the pg driver reads it: its other parameters (sslmode, options, ...) go there.",
        "  ?schema=NAME puts Steward's tables in schema NAME, created if missing (default: the connection's",
        "  search_path, usually public). Several servers on one store apply schema migrations once.",
        "  --data still holds the input, output and checkpoint files and the tokens.",
        "  example: steward server --store 'postgres://steward@db:5432/grid?schema=steward' --data /srv/steward",
      ].join("\n"),
    )
    .action(async (options) => {
      if (options.store !== undefined && !/^postgres(ql)?:\/\//.test(options.store))
        throw new CliError(`--store needs a postgres:// or postgresql:// URL, not ${redact(options.store)}`);
      const data = openDataDir(
        options.data,
        { admin: options.token, join: options.joinToken },
        options.store,
      );
      const log = daemonLogger();
      const server = await startServer(serverOptions(data, options, log));
      process.stderr.write(
        `steward server at ${server.url}\n  admin token: ${data.root}/admin-token\n  join token:  ${data.root}/join-token\n`,
      );
      if (options.store) process.stderr.write(`  store:       ${redact(options.store)}\n`);
      onShutdown(() => server.close());
    });
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:@/]*):[^@/]*@/i, "$1:***@");
}
