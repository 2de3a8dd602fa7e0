// The module of each command of `steward` (the table of names and descriptions is
// common/command-line/commands.ts). The program loads only the module of the command it runs (a
// daemon's module loads the whole server; a client command's, the client only); `steward --help`
// loads none: it lists the table. The only place that names both the client's commands (src/cli/)
// and the daemons' (src/daemons/), each through a dynamic import.

import type { Command } from "commander";
import { COMMANDS, type CommandModule } from "../common/command-line/commands.ts";

type Register = (program: Command) => void;

const MODULES = {
  up: () => import("../daemons/commands/up.ts").then((m) => m.registerUp),
  server: () => import("../daemons/commands/server.ts").then((m) => m.registerServer),
  agent: () => import("../daemons/commands/agent.ts").then((m) => m.registerAgent),
  submit: () => import("../cli/commands/submit.ts").then((m) => m.registerSubmit),
  run: () => import("../cli/commands/run.ts").then((m) => m.registerRun),
  ps: () => import("../cli/commands/ps.ts").then((m) => m.registerPs),
  status: () => import("../cli/commands/status.ts").then((m) => m.registerStatus),
  show: () => import("../cli/commands/show.ts").then((m) => m.registerShow),
  acct: () => import("../cli/commands/acct.ts").then((m) => m.registerAcct),
  share: () => import("../cli/commands/share.ts").then((m) => m.registerShare),
  logs: () => import("../cli/commands/logs.ts").then((m) => m.registerLogs),
  wait: () => import("../cli/commands/wait.ts").then((m) => m.registerWait),
  control: () => import("../cli/commands/control.ts").then((m) => m.registerControl),
  update: () => import("../cli/commands/update.ts").then((m) => m.registerUpdate),
  fetch: () => import("../cli/commands/fetch.ts").then((m) => m.registerFetch),
  hosts: () => import("../cli/commands/hosts.ts").then((m) => m.registerHosts),
  explain: () => import("../cli/commands/explain.ts").then((m) => m.registerExplain),
  pools: () => import("../cli/commands/pools.ts").then((m) => m.registerPools),
  tokens: () => import("../cli/commands/tokens.ts").then((m) => m.registerTokens),
  secret: () => import("../cli/commands/secret.ts").then((m) => m.registerSecret),
  admin: () => import("../cli/commands/admin.ts").then((m) => m.registerAdmin),
  completion: () =>
    import("./completion.ts").then(
      (m) => (program: Command) => m.registerCompletion(program, registerAllCommands),
    ),
  config: () => import("../daemons/commands/config.ts").then((m) => m.registerConfig),
} satisfies Record<CommandModule, () => Promise<Register>>;

/**
 * Adds the commands to `program`: the ones of `wanted`'s module in full, the others as names and
 * descriptions only (enough for `--help` and for commander to name an unknown command).
 */
export async function registerCommands(program: Command, wanted: string | null): Promise<void> {
  const entry = COMMANDS.find((each) => each.name === wanted);
  if (entry) (await MODULES[entry.module]())(program);
  for (const each of COMMANDS)
    if (each.module !== entry?.module) program.command(each.name).description(each.description);
}

/**
 * Adds every command in full, in the table's order (loads every module, the server's too): for the
 * reference docs and the completion script, never for running a command.
 */
export async function registerAllCommands(program: Command): Promise<void> {
  const modules = [...new Set(COMMANDS.map((each) => each.module))];
  const registers = await Promise.all(modules.map((module) => MODULES[module]()));
  for (const register of registers) register(program);
  const order = new Map(COMMANDS.map((each, index) => [each.name, index]));
  const rank = (command: Command) => order.get(command.name()) ?? COMMANDS.length;
  (program.commands as Command[]).sort((a, b) => rank(a) - rank(b));
}
