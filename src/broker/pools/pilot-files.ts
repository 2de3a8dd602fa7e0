// The files a pool's pilots need before they are submitted: their folder (logs, work folders) and
// the pool's join token in a file only the pilot's account may read, which the agent reads with
// --token-file (a token on the command line shows in every process list). Both are made by the
// pilot's account itself (runuser/sudo), so a link it planted in its folder gains it nothing: the
// broker's privileges never touch a path that account controls.

import { execFile } from "node:child_process";
import { join } from "node:path";
import { DriverError } from "../drivers/driver.ts";

/** The pool token's file in a pilot folder. */
export function poolTokenFile(dir: string): string {
  return join(dir, "pool-token");
}

const PREPARE = [
  "umask 077",
  'mkdir -p -- "$1"',
  'cat > "$1/.pool-token.new"',
  'chmod 600 -- "$1/.pool-token.new"',
  'mv -f -- "$1/.pool-token.new" "$1/pool-token"',
].join(" && ");

/** Makes the folder (0700) and writes the token file (0600) in it, as the account `runAs` runs as. */
export function preparePilotFiles(dir: string, token: string, runAs: readonly string[]): Promise<void> {
  const [command, ...args] = [...runAs, "sh", "-c", PREPARE, "sh", dir];
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      args,
      { timeout: 15_000, env: { PATH: process.env.PATH } },
      (error, _, stderr) => {
        if (!error) return resolve();
        const detail = stderr.trim() || error.message;
        reject(
          new DriverError(`pilot folder ${dir} not prepared: ${detail.split("\n").slice(-2).join(" ")}`),
        );
      },
    );
    child.stdin?.end(`${token}\n`);
  });
}
