import type { Command } from "commander";
import type { Pool } from "../../common/api/pools.ts";
import { describe } from "../../common/command-line/commands.ts";
import { ApiClient } from "../client.ts";
import { printJson, table } from "../format.ts";

export function registerPools(program: Command): void {
  program
    .command("pools")
    .description(describe("pools"))
    .option("--json", "print JSON")
    .action(async (options: { json?: boolean }) => {
      const pools = await new ApiClient().json<Pool[]>("GET", "/api/v1/pools");
      if (options.json) return printJson(pools);
      if (pools.length === 0) return void process.stdout.write("no pools (steward server --pools FILE)\n");
      const rows = pools.map((pool) => [
        pool.name,
        pool.driver,
        pool.state,
        pool.pilots.pending,
        pool.pilots.running,
        pool.pilots.ending,
        pool.reason ?? "",
      ]);
      process.stdout.write(
        `${table(["NAME", "DRIVER", "STATE", "PENDING", "RUNNING", "ENDING", "REASON"], rows)}\n`,
      );
    });
}
