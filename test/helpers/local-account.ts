// Local accounts for tests about who a process runs as (Slurm pilots under a pool's `account:`,
// jobs of another account): made with useradd, with a home folder under the temp folder, and
// removed with it after. Needs root.

import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface LocalAccount {
  name: string;
  uid: number;
  home: string;
}

/** Why these tests cannot make accounts here (not root, no useradd), or null. */
export function accountsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return "not root";
  for (const tool of ["useradd", "userdel", "runuser", "getent"])
    try {
      execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    } catch {
      return `no ${tool}`;
    }
  return null;
}

/** A new account named `name` (one left by an earlier run is removed first), with a home of its own. */
export function createAccount(name: string): LocalAccount {
  removeAccount(name);
  const home = join(tmpdir(), `steward-home-${name}`);
  execFileSync("useradd", ["--create-home", "--home-dir", home, "--shell", "/bin/sh", name]);
  const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim());
  return { name, uid, home };
}

/** Removes the account and its home (its processes must have ended). */
export function removeAccount(name: string): void {
  execFileSync("sh", ["-c", 'userdel --remove "$1" 2>/dev/null; true', "sh", name]);
}
