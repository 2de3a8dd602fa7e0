// steward: the command line. One file per command under commands/; all of them talk to the API,
// except server, agent and up, which run the daemons.

import { Command, CommanderError } from "commander";
import { JobFileError } from "../model/jobfile-error.ts";
import { CliError } from "./cli-error.ts";
import { registerCommands } from "./commands/index.ts";

// bin/steward turned Node's compile cache on for this process; what it starts does not inherit it.
delete process.env.NODE_COMPILE_CACHE;

// Output piped into a reader that stops early (`steward ps | head -3`) is not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

const program = new Command("steward")
  .description("Steward: a fault-tolerant grid job manager")
  .version("0.1.0")
  .option("--ca <file>", "trust this PEM certificate authority for a server's TLS (or STEWARD_CA)")
  .showHelpAfterError()
  .exitOverride();

// A private authority for HTTPS/WSS: `steward --ca FILE ...`, `steward agent --ca FILE`, or STEWARD_CA.
program.hook("preAction", async (_root, action) => {
  const ca: string | undefined = action.opts().ca ?? program.opts().ca ?? process.env.STEWARD_CA;
  if (!ca) return;
  try {
    const { trustAuthority } = await import("../transport/trust.ts");
    trustAuthority(ca);
  } catch (error) {
    throw new CliError(`--ca ${ca}: ${(error as Error).message}`, 2);
  }
});

await registerCommands(program, commandNamed(process.argv.slice(2)));

program.addHelpText(
  "after",
  "\nEnvironment: STEWARD_URL (default http://127.0.0.1:4780, a comma-separated list for several servers),\nSTEWARD_TOKEN (admin token; default: ./.steward/admin-token when present), STEWARD_CA (as --ca).",
);

/** The command the arguments name (`help X` names X), past the global options; null for none. */
function commandNamed(args: string[]): string | null {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--ca") i++;
    else if (arg === "help") return args[i + 1] ?? null;
    else if (!arg.startsWith("-")) return arg;
  }
  return null;
}

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
