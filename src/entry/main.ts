// steward: the program's entry (bin/steward runs it). One file per command: the client's under
// src/cli/commands/, all of which talk to the API; the daemons' (server, agent, up) and config under
// src/daemons/commands/; completion here. It loads only the module of the command it runs.

import { CommanderError } from "commander";
import { CliError } from "../common/command-line/cli-error.ts";
import { JobFileError } from "../common/model/jobfile-error.ts";
import { registerCommands } from "./command-modules.ts";
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
