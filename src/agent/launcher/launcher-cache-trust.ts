// Whether a compiled launcher kept on disk may be run: it runs every job, as root on an agent
// that runs jobs as their owners, so its folder (STEWARD_LAUNCHER_CACHE, or the default beside
// Steward's own files) and the kept program must be the agent's account's (or root's) and
// writable by no one else. The folders above the cache must not let another account replace it
// either (a folder others may write needs its sticky bit, as /tmp has).

import { lstatSync, realpathSync, statSync } from "node:fs";
import { dirname } from "node:path";

/** What is looked at of a file or folder. */
export interface Ownership {
  uid: number;
  mode: number;
  link: boolean;
}

const STICKY = 0o1000;
const WRITABLE_BY_OTHERS = 0o022;

/**
 * Why `what` may not be trusted by an agent running as `uid`, or null: a link, another account's
 * (root's is trusted), or writable by its group or others (unless `stickyAllowed` and the sticky
 * bit is set: an ancestor such as /tmp, where no one may rename what another made).
 */
export function distrust(what: Ownership, uid: number, stickyAllowed = false): string | null {
  if (what.link) return "is a link";
  if (what.uid !== uid && what.uid !== 0)
    return `is owned by uid ${what.uid}, not by the agent's account (uid ${uid}) or root`;
  const writable = (what.mode & WRITABLE_BY_OTHERS) !== 0;
  if (writable && !(stickyAllowed && (what.mode & STICKY) !== 0))
    return `may be written by other accounts (mode 0${(what.mode & 0o7777).toString(8)})`;
  return null;
}

function ownership(path: string, follow: boolean): Ownership {
  const stats = follow ? statSync(path) : lstatSync(path);
  return { uid: stats.uid, mode: stats.mode, link: stats.isSymbolicLink() };
}

/**
 * Why the cache (`cache`, its folders above it, the program's `folder`, and the kept `program` if
 * there) may not be trusted, naming the path; null when all may be. The cache itself may be
 * reached through a link (its real path is checked); the folder and the program may not be links.
 */
export function untrustedLauncherCache(
  cache: string,
  folder: string,
  program: string,
  uid: number,
): string | null {
  const real = realpathSync(cache);
  for (let above = dirname(real); ; above = dirname(above)) {
    const reason = distrust(ownership(above, true), uid, true);
    if (reason) return `${above} (above the launcher cache) ${reason}`;
    if (dirname(above) === above) break;
  }
  const checks: [string, boolean][] = [
    [real, true],
    [folder, false],
    ...(existsNoFollow(program) ? [[program, false] as [string, boolean]] : []),
  ];
  for (const [path, follow] of checks) {
    const reason = distrust(ownership(path, follow), uid);
    if (reason) return `${path} ${reason}`;
  }
  return null;
}

function existsNoFollow(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
}
