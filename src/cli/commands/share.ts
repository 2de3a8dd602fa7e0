import type { Command } from "commander";
import type { z } from "zod";
import type { sharesSchema } from "../../common/api/shares.ts";
import { describe } from "../../common/command-line/commands.ts";
import { ApiClient } from "../client.ts";
import { printJson, table } from "../format.ts";

type Shares = z.infer<typeof sharesSchema>;

export function registerShare(program: Command): void {
  program
    .command("share")
    .description(describe("share"))
    .option(
      "--json",
      "print JSON: {at, halfLifeSeconds, lines: [{kind, name, parent, depth, rawShares, normShares, usage, normUsage, levelShares, levelUsage, levelFactor, factor}]}",
    )
    .addHelpText(
      "after",
      [
        "",
        "Columns, as Slurm's sshare with Fair Tree: ACCOUNT (indented by depth), USER, RAW SHARES (as",
        "the shares file gives them), NORM SHARES (fraction of the grid), USAGE (cpu-seconds, decayed",
        "with the server's --fair-share-half-life; running attempts count as they run), NORM USAGE",
        "(fraction of all usage), LEVEL FS (2^(-u/s), u and s its usage and shares over its siblings':",
        "siblings are ranked by it, highest first) and FACTOR (a user's rank over every user, 1 for the",
        "first: the waiting user with the highest goes first). Lines come in rank order. An admin or",
        "reader sees every line; a user sees their own line and the accounts above it.",
      ].join("\n"),
    )
    .action(async (options: { json?: boolean }) => {
      const shares = await new ApiClient().json<Shares>("GET", "/api/v1/shares");
      if (options.json) return printJson(shares);
      process.stdout.write(`${shareTable(shares.lines)}\n`);
    });
}

/** The lines as sshare prints them: accounts indented by depth, a user on its account's line. */
export function shareTable(lines: Shares["lines"]): string {
  const rows = lines.map((line) => {
    const indent = " ".repeat(Math.max(0, line.depth - (line.kind === "user" ? 1 : 0)));
    return [
      indent + (line.kind === "user" ? (line.parent ?? "") : line.name),
      line.kind === "user" ? line.name : "",
      line.depth === 0 ? "" : String(line.rawShares),
      line.normShares.toFixed(6),
      // Small usage keeps its fractions (a few short jobs); large is counted in whole cpu-seconds.
      line.usage < 100 ? line.usage.toFixed(2) : String(Math.round(line.usage)),
      line.normUsage.toFixed(6),
      line.depth === 0 ? "" : line.levelFactor.toFixed(6),
      line.factor === null ? "" : line.factor.toFixed(6),
    ];
  });
  return table(
    ["ACCOUNT", "USER", "RAW SHARES", "NORM SHARES", "USAGE", "NORM USAGE", "LEVEL FS", "FACTOR"],
    rows,
  );
}
