// The folders the daemons keep their state in (a broker's data and blobs folders, an agent's work
// folder) hold every job's env, inputs and scripts, and the tokens: they are the daemon's
// account's alone. The daemons make everything with umask 077 (0700 folders, 0600 files). A
// folder is made 0700 when missing. One another account may write, or that is another account's,
// stops the daemon at start: that account could read what it holds, or swap it (a job.sh, an
// input) for its own. One that an older Steward left readable by all (folders 0755, files 0644)
// is tightened, and the daemon says so: the folder itself, which alone keeps every other account
// out of all below it, and what is directly in it (the database, the tokens, blobs/, attempts/),
// where the daemon's own. The folders deeper down (a blobs tree of millions of files) are left as
// they are: nobody else can reach them any more.

import { execFileSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, readdirSync, realpathSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { CliError } from "../common/command-line/cli-error.ts";

/** What a folder is to a daemon, for its messages, and which of its bits others may keep. */
export interface FolderRole {
  /** "data folder", "blobs folder", "work folder". */
  what: string;
  /** The flag that chooses another one: --data, --blobs, --work. */
  flag: string;
  /** What another account could change there, for the refusal. */
  holds: string;
  /**
   * Group and other bits the folder keeps, and so do its entries named in `passable`: 0o011 for
   * the work folder of an agent that runs jobs as other accounts (they pass through to their own
   * attempt folder; README "Jobs run as whom").
   */
  keep?: number;
  passable?: readonly string[];
}

export const DATA_FOLDER: FolderRole = {
  what: "data folder",
  flag: "--data",
  holds: "every job's env and files, and the tokens",
};

export const BLOBS_FOLDER: FolderRole = { what: "blobs folder", flag: "--blobs", holds: "every job's files" };

/** The work folder of an agent; `passable` when it runs jobs as other accounts. */
export function workFolderRole(passable: boolean): FolderRole {
  return {
    what: "work folder",
    flag: "--work",
    holds: "the job scripts it runs and its host credential",
    ...(passable ? { keep: 0o011, passable: ["attempts"] } : {}),
  };
}

/**
 * Makes the daemon's files private from now on (umask 077), and answers the umask it had: the one
 * jobs get back (README "Security model").
 */
export function privateUmask(): number {
  return process.umask(0o077);
}

/**
 * Makes `dir` (0700) when missing, refuses it when another account may write it or owns it
 * (CliError, exit 2), and tightens what an older Steward left readable by others. Answers its real
 * path (a link to it is resolved once: a link swapped later changes nothing) and a notice when
 * something was tightened.
 */
export function privateFolder(dir: string, role: FolderRole): { path: string; tightened: string | null } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = realpathSync.native(dir);
  const info = lstatSync(path);
  if (!info.isDirectory())
    throw new CliError(`the ${role.what} ${path} is not a folder (${role.flag} DIR)`, 2);
  const me = process.geteuid?.() ?? 0;
  if (info.uid !== me)
    throw new CliError(
      `the ${role.what} ${path} belongs to ${who(info.uid)}, not to this daemon's account, ${who(me)}: that account could read and change ${role.holds}; choose a folder of your own (${role.flag} DIR)`,
      2,
    );
  if (info.mode & 0o022)
    throw new CliError(
      `the ${role.what} ${path} is writable by other accounts (mode ${modeOf(info.mode)}): they could change ${role.holds}; chmod go-w ${path}, or choose another folder (${role.flag} DIR)`,
      2,
    );
  const keep = role.keep ?? 0;
  const before = modeOf(info.mode);
  const folderTightened = tighten(path, info.mode, keep);
  const entries: string[] = [];
  for (const name of readdirSync(path)) {
    const entry = lstatSync(join(path, name));
    // A link is not followed (its own mode means nothing); another account's entry is not ours to change.
    if (entry.isSymbolicLink() || entry.uid !== me) continue;
    if (tighten(join(path, name), entry.mode, role.passable?.includes(name) ? keep : 0)) entries.push(name);
  }
  if (!folderTightened && entries.length === 0) return { path, tightened: null };
  const what = folderTightened
    ? `the ${role.what} ${path} (mode ${before}, now ${modeOf(lstatSync(path).mode)}${entries.length ? `; and ${entries.join(", ")} in it` : ""})`
    : `${entries.join(", ")} in the ${role.what} ${path}`;
  return { path, tightened: `tightened ${what}: an older Steward left them readable by other accounts` };
}

/** Takes group and other bits off `path`, but `keep`; whether it had any. */
function tighten(path: string, mode: number, keep: number): boolean {
  const extra = mode & 0o077 & ~keep;
  if (!extra) return false;
  chmodSync(path, mode & 0o7777 & ~extra);
  return true;
}

function modeOf(mode: number): string {
  return (mode & 0o7777).toString(8);
}

/** The account of `uid` for messages: `alice (uid 1001)`, or `uid 1001` when it has no name. */
function who(uid: number): string {
  const name = accountName(uid);
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}

function accountName(uid: number): string | null {
  if (uid === (process.geteuid?.() ?? 0)) {
    try {
      return os.userInfo().username;
    } catch {}
  }
  try {
    const line = execFileSync("getent", ["passwd", String(uid)], { encoding: "utf8", stdio: "pipe" });
    return line.split(":")[0] || null;
  } catch {
    return null;
  }
}
