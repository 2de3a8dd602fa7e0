// The working folder of a job run in place (its job file's `workdir`, in a folder this host shares),
// checked before the attempt is prepared: the job's own account must be able to enter it. The
// check is the system's answer to that account, never root's: a job of another account
// (--run-as, --run-as-owner) is tried by a shell dropped to that account through setpriv, as the
// job itself will be (job-script.ts); a job of the agent's own account by the agent itself. The
// agent never makes the folder, nor changes its owner or mode: a folder that is not there, or that
// the account may not enter, fails the attempt with a reason naming the folder.

import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import type { JobUser } from "../accounts/run-as.ts";

/** How long the check may take (a hung network filesystem never answers): past it, the attempt fails. */
export const WORKING_FOLDER_CHECK_MS = 30_000;

/**
 * Run as the job's account, with the folder as `$1`: 0 when it enters it; 3 when it sees a folder
 * there that it may not enter; 4 when what is there is no folder; 5 when it sees nothing there
 * (none, or a folder above it that the account may not pass).
 */
const ENTER_AS_ACCOUNT =
  'cd -- "$1" 2>/dev/null && exit 0; [ -d "$1" ] && exit 3; [ -e "$1" ] && exit 4; exit 5';

/** Why the account cannot work in the folder, by ENTER_AS_ACCOUNT's exit code. */
function refusalOf(code: number, folder: string, who: string): string {
  const prefix = `working folder ${folder}`;
  if (code === 3) return `${prefix}: permission denied to ${who} (it may not enter the folder)`;
  if (code === 4) return `${prefix}: not a folder`;
  if (code === 5) return `${prefix}: no such folder for ${who} (or a folder above it ${who} may not pass)`;
  return `${prefix}: could not be checked as ${who} (exit code ${code})`;
}

/** `alice (uid 1001)`, or the agent's own account. */
function accountName(user: JobUser | null): string {
  if (user) return `${user.account.name} (uid ${user.account.uid})`;
  return `uid ${process.geteuid?.() ?? 0} (the agent's account)`;
}

/** Whether the folder is one the agent's own account may enter: its own access(2) answers. */
async function ownRefusal(folder: string): Promise<string | null> {
  try {
    const info = await stat(folder);
    if (!info.isDirectory()) return refusalOf(4, folder, accountName(null));
    await access(folder, constants.X_OK);
    return null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return refusalOf(5, folder, accountName(null));
    if (code === "EACCES") return refusalOf(3, folder, accountName(null));
    return `working folder ${folder}: ${(error as Error).message}`;
  }
}

/** ENTER_AS_ACCOUNT as the job's account (setpriv, its groups too, a fresh environment): its exit code. */
function enterAs(folder: string, user: JobUser): Promise<number> {
  const { account } = user;
  const groups = account.groups.length ? `--groups=${account.groups.join(",")}` : "--clear-groups";
  const args = [
    `--reuid=${account.uid}`,
    `--regid=${account.gid}`,
    groups,
    "--reset-env",
    "--",
    "/bin/sh",
    "-c",
    ENTER_AS_ACCOUNT,
    "steward-workdir",
    folder,
  ];
  return new Promise((resolve) => {
    execFile(user.setpriv, args, { cwd: "/" }, (error) => {
      if (!error) return resolve(0);
      const code = (error as { code?: unknown }).code;
      resolve(typeof code === "number" ? code : -1);
    });
  });
}

/**
 * Why the job (of the agent's own account when `user` is null) cannot run in `folder`, or null when
 * its account may enter it. Never waits longer than `timeoutMs`.
 */
export async function workingFolderRefusal(
  folder: string,
  user: JobUser | null,
  timeoutMs = WORKING_FOLDER_CHECK_MS,
): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(
      () =>
        resolve(
          `working folder ${folder}: no answer within ${timeoutMs / 1000} s (a filesystem not answering?)`,
        ),
      timeoutMs,
    );
  });
  const checked = user
    ? enterAs(folder, user).then((code) => (code === 0 ? null : refusalOf(code, folder, accountName(user))))
    : ownRefusal(folder);
  try {
    return await Promise.race([checked, late]);
  } finally {
    clearTimeout(timer);
  }
}
