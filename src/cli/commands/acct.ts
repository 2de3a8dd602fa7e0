import { type Command, InvalidArgumentError, Option } from "commander";
import type { AccountingRow } from "../../common/api/accounting.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { ApiClient } from "../client.ts";
import { printJson } from "../format.ts";
import { accountingCsv, accountingTable, parseSince } from "../usage-format.ts";

/** steward acct: GET /api/v1/accounting. */
export function registerAcct(program: Command): void {
  program
    .command("acct")
    .description(describe("acct"))
    .option("--user <user>", "only this owner's attempts (a user token sees only its own)")
    .option(
      "--since <when>",
      "only attempts that ended since: an age (7d, 12h, 90m, 2w) or a date or time (2026-11-01, 2026-11-01T08:00:00Z)",
      "7d",
    )
    .addOption(
      new Option("--format <format>", "table, csv (one line an attempt) or json")
        .choices(["table", "csv", "json"])
        .default("table"),
    )
    .option("--limit <n>", "at most this many attempts, oldest end first", (value: string) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1 || n > 100_000)
        throw new InvalidArgumentError("a whole number, 1..100000");
      return n;
    })
    .action(
      async (options: { user?: string; since: string; format: "table" | "csv" | "json"; limit?: number }) => {
        const since = parseSince(options.since, Date.now());
        if (since === null)
          throw new CliError(
            `--since ${options.since}: an age such as 7d, 12h or 2w, or a date such as 2026-11-01`,
            2,
          );
        const query = new URLSearchParams({ since: new Date(since).toISOString() });
        if (options.user) query.set("user", options.user);
        if (options.limit !== undefined) query.set("limit", String(options.limit));
        const rows = await new ApiClient().json<AccountingRow[]>("GET", `/api/v1/accounting?${query}`);
        if (options.format === "json") return printJson(rows);
        if (options.format === "csv") return void process.stdout.write(accountingCsv(rows));
        process.stdout.write(rows.length === 0 ? "no ended attempts\n" : `${accountingTable(rows)}\n`);
      },
    );
}
