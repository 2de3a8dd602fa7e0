// steward: the command line. One file per command under commands/; all of them talk to the API,
// except server, agent and up, which run the daemons.

import { CommanderError } from "commander";
import { JobFileError } from "../common/model/jobfile-error.ts";
import { CliError } from "./cli-error.ts";
import { registerCommands } from "./commands/index.ts";
import { newProgram } from "./program.ts";

// bin/steward turned Node's compile cache on for this process; what it starts does not inherit it.
delete process.env.NODE_COMPILE_CACHE;

// Output piped into a reader that stops early (`steward ps | head -3`) is not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});

const program = newProgram();

await registerCommands(program, commandNamed(process.argv.slice(2)));

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
