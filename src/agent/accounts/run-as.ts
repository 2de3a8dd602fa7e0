// Whom an agent runs jobs as. An agent run as root runs each attempt as an unprivileged account:
// `--run-as USER` (one account for every job) or `--run-as-owner` (the job's owner, mapped to the
// local account of the same name; no such account fails the attempt, it never runs as root). An
// agent not run as root runs jobs as itself. Accounts are read with `getent passwd` (local files,
// LDAP or whatever NSS is set up for) and their groups with `id -G`; jobs drop to them through
// util-linux's setpriv (job-script.ts), found at start by its full path. Never root, nor an
// account with root's group, primary or supplementary, nor a system account (uid-min.ts).

import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import os from "node:os";
import { delimiter, isAbsolute, join } from "node:path";
import { promisify } from "node:util";
import { describeUidLimit, type UidLimit, uidLimit } from "./uid-min.ts";

const run = promisify(execFile);

export interface Account {
  name: string;
  uid: number;
  gid: number;
  /** Supplementary groups. */
  groups: number[];
  home: string;
}

export type RunAs =
  /** Jobs run as the agent's own account (not root, or root with neither flag). */
  | { kind: "self" }
  | { kind: "user"; account: Account; setpriv: string }
  /** `limit`: the lowest uid a job runs as; absent, the system's (uid-min.ts), read for each job. */
  | { kind: "owner"; setpriv: string; limit?: UidLimit };

/** An attempt's account when it is not the agent's own, and the setpriv that drops to it. */
export interface JobUser {
  account: Account;
  setpriv: string;
}

/** The line of `getent passwd NAME` as an account; null when there is no such account. */
export function parsePasswdLine(line: string): Omit<Account, "groups"> | null {
  const fields = line.trim().split(":");
  if (fields.length < 7) return null;
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (fields[2] === "" || fields[3] === "" || !Number.isInteger(uid) || !Number.isInteger(gid)) return null;
  return { name: fields[0], uid, gid, home: fields[5] };
}

/** A local account by name, or null. Names are checked first: they reach a command line. */
async function lookupAccount(name: string): Promise<Account | null> {
  if (!/^[A-Za-z0-9_][\w.@-]{0,63}$/.test(name)) return null;
  const line = await run("getent", ["passwd", name]).then(
    ({ stdout }) => stdout.split("\n")[0],
    () => null,
  );
  const found = line === null ? null : parsePasswdLine(line);
  if (!found) return null;
  // Without its groups an account cannot be told free of root's group: it is not taken.
  const groups = await run("id", ["-G", name]).then(
    ({ stdout }) => stdout.trim().split(/\s+/).map(Number),
    (error: Error) => {
      throw new RunAsError(`cannot read the groups of local account "${name}" (id -G): ${error.message}`);
    },
  );
  if (groups.length === 0 || !groups.every(Number.isInteger))
    throw new RunAsError(`cannot read the groups of local account "${name}" (id -G)`);
  return { ...found, groups };
}

/** Why an account will not do for a job (it is root, or root's group is among its groups), or null. */
export function rootReason(account: Account): string | null {
  if (account.uid === 0) return "that account is root";
  if (account.gid === 0) return "that account's group is root's";
  if (account.groups.includes(0))
    return `${account.name} (uid ${account.uid}) has root's group (gid 0) among its groups`;
  return null;
}

/** Why an account will not do for a job: root's, or a system account's (below `limit`); else null. */
export function unfitReason(account: Account, limit: UidLimit): string | null {
  const root = rootReason(account);
  if (root) return root;
  if (account.uid < limit.min)
    return `${account.name} (uid ${account.uid}) is a system account, below ${describeUidLimit(limit)}`;
  return null;
}

/**
 * The full path of an executable named `name` in a PATH-like list of folders, or null. Jobs must not
 * choose the setpriv that runs as root, so it is found once, in the agent's own PATH.
 */
export function findExecutable(name: string, searchPath: string): string | null {
  for (const dir of searchPath.split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {}
  }
  return null;
}

export class RunAsError extends Error {}

/** setpriv with --reset-env (util-linux 2.35 or later), by its full path; throws RunAsError without it. */
async function findSetpriv(flag: string): Promise<string> {
  const setpriv = findExecutable("setpriv", `${process.env.PATH ?? ""}${delimiter}/usr/bin${delimiter}/bin`);
  if (!setpriv)
    throw new RunAsError(`${flag} needs setpriv (util-linux) to start jobs as an account: it is not on PATH`);
  const help = await run(setpriv, ["--help"]).then(
    ({ stdout }) => stdout,
    () => "",
  );
  if (!help.includes("--reset-env"))
    throw new RunAsError(
      `${flag} needs setpriv with --reset-env (util-linux 2.35 or later); ${setpriv} has none`,
    );
  return setpriv;
}

/**
 * The agent's choice from its flags, checked at start: the flags need root; --run-as names an
 * account that exists, is not root's and not a system account (below --run-as-min-uid, else the
 * system's UID_MIN); they do not go together.
 */
export async function chooseRunAs(
  flags: { runAs?: string; runAsOwner?: boolean; runAsMinUid?: number },
  uid = process.getuid?.() ?? 0,
  loginDefs?: string,
): Promise<RunAs> {
  if (flags.runAs !== undefined && flags.runAsOwner)
    throw new RunAsError(
      "--run-as and --run-as-owner do not go together: one account for all jobs, or each job's owner",
    );
  if (flags.runAsMinUid !== undefined && flags.runAs === undefined && !flags.runAsOwner)
    throw new RunAsError(
      "--run-as-min-uid goes with --run-as USER or --run-as-owner: without them, jobs run as the agent's own account",
    );
  const flag = flags.runAs !== undefined ? "--run-as" : "--run-as-owner";
  if ((flags.runAs !== undefined || flags.runAsOwner) && uid !== 0)
    throw new RunAsError(
      `${flag} needs the agent to run as root (it runs as ${os.userInfo().username}); without it, jobs run as the agent's own account`,
    );
  if (flags.runAs === undefined && !flags.runAsOwner) return { kind: "self" };
  const limit = uidLimit(flags.runAsMinUid, loginDefs);
  if (flags.runAs !== undefined) {
    const account = await lookupAccount(flags.runAs);
    if (!account) throw new RunAsError(`--run-as ${flags.runAs}: no such local account`);
    const notFit = unfitReason(account, limit);
    if (notFit) throw new RunAsError(`--run-as ${flags.runAs}: ${notFit}`);
    return { kind: "user", account, setpriv: await findSetpriv(flag) };
  }
  return { kind: "owner", setpriv: await findSetpriv(flag), limit };
}

/** What the agent says at start about whom jobs run as; `warn` when that is root. */
export function runAsNotice(runAs: RunAs, uid = process.getuid?.() ?? 0): { warn: boolean; message: string } {
  switch (runAs.kind) {
    case "user":
      return {
        warn: false,
        message: `jobs run as ${runAs.account.name} (uid ${runAs.account.uid}): --run-as`,
      };
    case "owner":
      return {
        warn: false,
        message: `jobs run as the local account named like their owner: --run-as-owner${runAs.limit ? `; none below ${describeUidLimit(runAs.limit)}` : ""}`,
      };
    case "self":
      return uid === 0
        ? {
            warn: true,
            message:
              "jobs run as root: this agent runs as root with neither --run-as USER nor --run-as-owner; fine for one person on one machine, not for a shared host",
          }
        : { warn: false, message: `jobs run as ${os.userInfo().username} (the agent's own account)` };
  }
}

/**
 * Whom an attempt of `owner` runs as; null for the agent's own. Throws RunAsError naming a missing
 * account, or one the job must not run as (root's, a system account's).
 */
export async function accountFor(runAs: RunAs, owner: string | undefined): Promise<JobUser | null> {
  switch (runAs.kind) {
    case "self":
      return null;
    case "user":
      return { account: runAs.account, setpriv: runAs.setpriv };
    case "owner": {
      const name = owner ?? "";
      const account = await lookupAccount(name);
      if (!account)
        throw new RunAsError(
          `no local account "${name}" for the job's owner (this agent runs jobs as their owners: --run-as-owner)`,
        );
      const notFit = unfitReason(account, runAs.limit ?? uidLimit());
      if (notFit)
        throw new RunAsError(
          `the job's owner "${name}" maps to a local account this agent never runs jobs as: ${notFit}`,
        );
      return { account, setpriv: runAs.setpriv };
    }
  }
}
