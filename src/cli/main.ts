// steward: the command line. One file per command under commands/; all of them talk to the API,
// except server, agent and up, which run the daemons.

import { Command, CommanderError } from "commander";
import { JobFileError } from "../model/jobfile.ts";
import { trustAuthority } from "../transport/trust.ts";
import { CliError } from "./client.ts";
import { registerAgent } from "./commands/agent.ts";
import { registerControl } from "./commands/control.ts";
import { registerExplain } from "./commands/explain.ts";
import { registerFetch } from "./commands/fetch.ts";
import { registerHosts } from "./commands/hosts.ts";
import { registerLogs } from "./commands/logs.ts";
import { registerPools } from "./commands/pools.ts";
import { registerPs } from "./commands/ps.ts";
import { registerServer } from "./commands/server.ts";
import { registerShow } from "./commands/show.ts";
import { registerSubmit } from "./commands/submit.ts";
import { registerTokens } from "./commands/tokens.ts";
import { registerUp } from "./commands/up.ts";
import { registerWait } from "./commands/wait.ts";

const program = new Command("steward")
  .description("Steward: a fault-tolerant grid job manager")
  .version("0.1.0")
  .option("--ca <file>", "trust this PEM certificate authority for a server's TLS (or STEWARD_CA)")
  .showHelpAfterError()
  .exitOverride();

// A private authority for HTTPS/WSS: `steward --ca FILE ...`, `steward agent --ca FILE`, or STEWARD_CA.
program.hook("preAction", (_root, action) => {
  const ca: string | undefined = action.opts().ca ?? program.opts().ca ?? process.env.STEWARD_CA;
  if (!ca) return;
  try {
    trustAuthority(ca);
  } catch (error) {
    throw new CliError(`--ca ${ca}: ${(error as Error).message}`, 2);
  }
});

registerUp(program);
registerServer(program);
registerAgent(program);
registerSubmit(program);
registerPs(program);
registerShow(program);
registerLogs(program);
registerWait(program);
registerControl(program);
registerFetch(program);
registerHosts(program);
registerExplain(program);
registerPools(program);
registerTokens(program);

program.addHelpText(
  "after",
  "\nEnvironment: STEWARD_URL (default http://127.0.0.1:4780, a comma-separated list for several servers),\nSTEWARD_TOKEN (admin token; default: ./.steward/admin-token when present), STEWARD_CA (as --ca).",
);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? 0 : 3;
  } else if (error instanceof CliError) {
    process.stderr.write(`steward: ${error.message}\n`);
    process.exitCode = error.exitCode;
  } else if (error instanceof JobFileError) {
    process.stderr.write(`steward: ${error.message}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(
      `steward: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 3;
  }
}
