import { constants, createWriteStream, openSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Command } from "commander";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { ApiClient } from "../client.ts";

export function registerAdmin(program: Command): void {
  const admin = program.command("admin").description(describe("admin"));
  admin
    .command("backup")
    .description(
      "write a consistent backup of the running server (SQLite store: database, start tokens, files) to FILE, a .tar.gz; restore it with steward server --restore FILE (admin only)",
    )
    .argument("<file>", "where to write the archive (- for standard output)")
    .action(async (file: string) => {
      const response = await new ApiClient().request("POST", "/api/v1/admin/backup", {
        json: {},
        timeoutMs: null,
      });
      if (!response.body) throw new CliError("the server answered the backup with no body");
      const body = Readable.fromWeb(response.body);
      if (file === "-") {
        await pipeline(body, process.stdout);
        return;
      }
      // Written beside its target and renamed once whole: FILE is a complete backup or is not there.
      const target = resolve(file);
      const partial = `${target}.partial`;
      const fd = openPartial(partial);
      try {
        await pipeline(body, createWriteStream(partial, { fd }));
      } catch (error) {
        await rm(partial, { force: true });
        throw new CliError(`the backup broke off: ${(error as Error).message}`);
      }
      await rename(partial, target);
      process.stderr.write(`backup written to ${target}\n`);
    });
}

/**
 * FILE.partial, made new (O_EXCL) without following a link (O_NOFOLLOW), mode 0600: a file or link
 * someone planted there (in a folder others may write) is refused, never written through.
 */
function openPartial(partial: string): number {
  try {
    return openSync(
      partial,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || code === "ELOOP")
      throw new CliError(
        `${partial} already exists (a file or a link): the backup is written there first and renamed once whole; remove it if no other backup is running, and check who made it`,
      );
    throw new CliError(`${partial}: ${(error as Error).message}`);
  }
}
