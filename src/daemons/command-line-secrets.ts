// Secrets given as flags show in the process list (/proc/PID/cmdline), where any local account
// reads them: a daemon warns at its start for each, naming where the secret belongs instead.

import type { Command } from "commander";
import { holdsSecret } from "./redact-secrets.ts";
import { envName, keyOf, settingOptions } from "./settings.ts";

/** One warning for each setting given on the command line that is or holds a secret. */
export function commandLineSecretWarnings(command: Command): string[] {
  const warnings: string[] = [];
  for (const option of settingOptions(command)) {
    const name = option.attributeName();
    if (command.getOptionValueSource(name) !== "cli") continue;
    const key = keyOf(option);
    if (!holdsSecret(key, command.getOptionValue(name))) continue;
    const variable = envName(command, option);
    const what = /token/.test(key) ? "its value" : "a password";
    warnings.push(
      `${option.long} holds ${what}, which shows in the process list where any local account reads it: give it as ${variable ?? "a setting"}${variable ? " (an EnvironmentFile of mode 0600 under systemd)" : ""} or in a --config file of mode 0600`,
    );
  }
  return warnings;
}
