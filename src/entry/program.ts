// The root command of `steward`: its name, version, global options and help text, without any command
// (main.ts adds the one it runs; the reference docs and the shell completion add them all).

import { Command } from "commander";
import { CliError } from "../common/command-line/cli-error.ts";
import { stewardRelease } from "../common/protocol/versions.ts";

const ENVIRONMENT_HELP =
  "Environment: STEWARD_URL (default http://127.0.0.1:4780, a comma-separated list for several servers),\nSTEWARD_TOKEN (admin token; default: ./.steward/admin-token when present and STEWARD_URL is on this machine: 127.0.0.0/8, ::1, localhost), STEWARD_CA (as --ca).";

export function newProgram(): Command {
  const program = new Command("steward")
    .description("Steward: a fault-tolerant grid job manager")
    .version(stewardRelease(), "-V, --version", "print Steward's version (package.json's)")
    .option("--ca <file>", "trust this PEM certificate authority for a server's TLS (or STEWARD_CA)")
    .showHelpAfterError()
    .exitOverride();
  program.addHelpText("after", `\n${ENVIRONMENT_HELP}`);

  // A private authority for HTTPS/WSS: `steward --ca FILE ...`, `steward agent --ca FILE`, or STEWARD_CA.
  program.hook("preAction", async (_root, action) => {
    // server, agent, up: their config file and STEWARD_* variables, before anything reads options
    // (--ca); the daemons' settings module is loaded only for them.
    if (action.options.some((option) => option.long === "--config")) {
      const { applySettings } = await import("../daemons/settings.ts");
      applySettings(action);
    }
    const ca: string | undefined = action.opts().ca ?? program.opts().ca ?? process.env.STEWARD_CA;
    if (!ca) return;
    try {
      const { trustAuthority } = await import("../common/transport/trust.ts");
      trustAuthority(ca);
    } catch (error) {
      throw new CliError(`--ca ${ca}: ${(error as Error).message}`, 2);
    }
  });
  return program;
}
