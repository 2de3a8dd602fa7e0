import { Command } from "commander";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { applySettings, settingsYaml } from "../settings.ts";

const DAEMONS = {
  server: () => import("./server.ts").then((m) => m.registerServer),
  agent: () => import("./agent.ts").then((m) => m.registerAgent),
  up: () => import("./up.ts").then((m) => m.registerUp),
};

export function registerConfig(program: Command): void {
  program
    .command("config")
    .description(describe("config"))
    .option("--server", "the settings of steward server")
    .option("--agent", "the settings of steward agent")
    .option("--up", "the settings of steward up")
    .option("--config <file>", "the config file to read (or STEWARD_CONFIG)")
    .action(async (options: { server?: boolean; agent?: boolean; up?: boolean; config?: string }) => {
      const asked = (Object.keys(DAEMONS) as (keyof typeof DAEMONS)[]).filter((name) => options[name]);
      if (asked.length !== 1) throw new CliError("give one of --server, --agent or --up", 2);
      // The daemon's own command, never run: its options with their defaults, then the file and the variables.
      const scratch = new Command();
      (await DAEMONS[asked[0]]())(scratch);
      const daemon = scratch.commands[0];
      if (options.config !== undefined) daemon.setOptionValueWithSource("config", options.config, "cli");
      applySettings(daemon);
      process.stdout.write(settingsYaml(daemon));
    });
}
