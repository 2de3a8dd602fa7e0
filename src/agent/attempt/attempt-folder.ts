// Who owns what under the agent's work folder when jobs run as other accounts (--run-as,
// --run-as-owner). An attempt folder stays the agent's: it holds what the agent and the supervisor
// write while the job runs (job.sh, pid, exit, stop, stdout, stderr, checkpoint snapshots), and a
// job that owned the folder could swap any of them for a link to a file of root's. Only the
// folder's group is the account's (mode 0710: the job passes through, other accounts do not), and
// the parts the job writes are the account's: run/, checkpoint/ and notes/ (its progress and
// requirements), mode 0700, and the nodes file. Taking a folder back, those parts are emptied as
// that account (`rm -rf` with its uid and gid), so that root never walks a tree a job may still be
// changing (a process of the job's that left its group lives on).

import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { chmod, chown, lchown, lstat, readdir, rm, rmdir, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import type { Account } from "../accounts/run-as.ts";
import { RunAsError } from "../accounts/run-as.ts";

const run = promisify(execFile);

/** The parts of an attempt folder its job writes, given to its account. */
export const JOB_PARTS = ["run", "checkpoint", "notes", "nodes"] as const;

/** Tries at emptying a job's part as its account, should a process of the job's refill it. */
const EMPTY_TRIES = 3;

function agentUid(): number {
  return process.geteuid?.() ?? 0;
}

/** Gives the job's parts of an attempt folder (prepared, not started) to `account`. */
export async function handOver(dir: string, account: Account): Promise<void> {
  for (const part of JOB_PARTS) {
    const path = join(dir, part);
    const info = await lstat(path).catch(() => null);
    if (!info) continue;
    // lchown never follows a link; nothing here is the account's yet, so nothing moves meanwhile.
    if (info.isDirectory())
      for (const entry of await readdir(path, { recursive: true }))
        await lchown(join(path, entry), account.uid, account.gid);
    await lchown(path, account.uid, account.gid);
    await chmod(path, info.isDirectory() ? 0o700 : 0o600);
  }
  await chown(dir, agentUid(), account.gid);
  await chmod(dir, 0o710);
}

/** The account an attempt folder's job runs as, when not the agent's: the owner of its run/. */
export async function jobOwner(dir: string): Promise<{ uid: number; gid: number } | null> {
  const info = await lstat(join(dir, "run")).catch(() => null);
  return info?.isDirectory() && info.uid !== agentUid() ? { uid: info.uid, gid: info.gid } : null;
}

/**
 * Removes the folder of an attempt whose job ran as the agent's own account, when no more folders
 * are kept (spare-folders.ts): nothing in it is another account's, so it goes at once (start.json
 * first, as below), without a look at each part.
 * Synchronous: Node removes a tree in one native call, where the asynchronous rm takes a round
 * trip through the thread pool for each file (most of the agent's work for a short task).
 */
export function removeOwnAttemptFolder(dir: string): void {
  rmSync(join(dir, "start.json"), { force: true });
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Removes an attempt folder. Parts that are another account's are emptied as that account first;
 * one that cannot be emptied is left, with the folder (without its start.json, so that no later
 * agent takes it for an attempt).
 */
export async function removeAttemptFolder(dir: string): Promise<void> {
  const entries = await readdir(dir).catch(() => null);
  if (entries === null) return;
  await rm(join(dir, "start.json"), { force: true });
  let left = false;
  for (const name of entries) {
    const path = join(dir, name);
    const info = await lstat(path).catch(() => null);
    if (!info?.isDirectory() || info.uid === agentUid()) continue;
    let removed = false;
    for (let tries = 0; tries < EMPTY_TRIES && !removed; tries++) {
      // rm empties it, then cannot take it out of the agent's folder: rmdir does that.
      await run("rm", ["-rf", "--", path], { uid: info.uid, gid: info.gid }).catch(() => null);
      removed = await rmdir(path).then(
        () => true,
        (error: NodeJS.ErrnoException) => error.code === "ENOENT",
      );
    }
    left ||= !removed;
  }
  if (!left) await rm(dir, { recursive: true, force: true });
}

/**
 * Checks and locks the agent's work folder when jobs run as other accounts: it must be the agent's
 * own (not a link, not made by someone else), and every folder above it passable, else no job could
 * reach its run folder; it and its attempts/ become 0711 (passable, not listable).
 */
export async function lockWorkFolder(workFolder: string): Promise<void> {
  const workDir = resolve(workFolder);
  const attempts = join(workDir, "attempts");
  for (const path of [workDir, attempts]) {
    const info = await lstat(path);
    if (!info.isDirectory() || info.uid !== agentUid())
      throw new RunAsError(
        `the work folder ${path} is ${info.isDirectory() ? `uid ${info.uid}'s` : "not a folder"}: with jobs run as other accounts it must be the agent's own`,
      );
  }
  for (let above = dirname(workDir); ; above = dirname(above)) {
    const info = await stat(above).catch(() => null);
    if (info && (info.mode & 0o001) === 0)
      throw new RunAsError(
        `jobs run as other accounts cannot pass through ${above} (mode ${(info.mode & 0o777).toString(8)}) to the work folder ${workDir}: choose a work folder they can reach (--work)`,
      );
    if (above === dirname(above)) break;
  }
  await chmod(workDir, 0o711);
  await chmod(attempts, 0o711);
}
