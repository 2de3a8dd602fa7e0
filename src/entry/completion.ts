import type { Command } from "commander";
import { CliError } from "../common/command-line/cli-error.ts";
import { describe } from "../common/command-line/commands.ts";
import { completionScript, SHELLS, type Shell } from "./completion-script.ts";
import { newProgram } from "./program.ts";

/**
 * The completion command; `registerAll` adds every command in full to a new program (the table of
 * modules, command-modules.ts, hands it in: this module does not import that table, which loads it).
 */
export function registerCompletion(program: Command, registerAll: (program: Command) => Promise<void>): void {
  program
    .command("completion")
    .description(describe("completion"))
    .argument(
      "<shell>",
      SHELLS.join(", ") +
        " (job ids come from `steward ps --json`, workflow ids from `steward ps --workflows --json`, at each TAB)",
    )
    .addHelpText(
      "after",
      "\nInstall: bash: source <(steward completion bash) in ~/.bashrc, or save it as ~/.local/share/bash-completion/completions/steward\n" +
        "         zsh:  source <(steward completion zsh) in ~/.zshrc\n" +
        "         fish: steward completion fish > ~/.config/fish/completions/steward.fish",
    )
    .action(async (shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell))
        throw new CliError(`completion: no shell ${shell}; one of ${SHELLS.join(", ")}`, 2);
      const full = newProgram();
      await registerAll(full);
      process.stdout.write(completionScript(full, shell as Shell));
    });
}
