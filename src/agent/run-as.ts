// Whom an agent runs jobs as. An agent run as root runs each attempt as an unprivileged account:
// `--run-as USER` (one account for every job) or `--run-as-owner` (the job's owner, mapped to the
// local account of the same name; no such account fails the attempt, it never runs as root). An
// agent not run as root runs jobs as itself. Accounts are read with `getent passwd` (local files,
// LDAP or whatever NSS is set up for) and their groups with `id -G`.

import { execFileSync } from "node:child_process";
import os from "node:os";

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
  { kind: "self" } | { kind: "user"; account: Account } | { kind: "owner" };

/** The line of `getent passwd NAME` as an account; null when there is no such account. */
export function parsePasswdLine(line: string): Omit<Account, "groups"> | null {
  const fields = line.trim().split(":");
  if (fields.length < 7) return null;
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) return null;
  return { name: fields[0], uid, gid, home: fields[5] };
}

/** A local account by name, or null. Names are checked first: they reach a command line. */
export function lookupAccount(name: string): Account | null {
  if (!/^[A-Za-z0-9_][\w.@-]{0,63}$/.test(name)) return null;
  let line: string;
  try {
    line = execFileSync("getent", ["passwd", name], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch {
    return null;
  }
  const found = parsePasswdLine(line.split("\n")[0]);
  if (!found) return null;
  let groups: number[] = [found.gid];
  try {
    groups = execFileSync("id", ["-G", name], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
      .trim()
      .split(/\s+/)
      .map(Number)
      .filter(Number.isInteger);
  } catch {}
  return { ...found, groups };
}

export class RunAsError extends Error {}

/**
 * The agent's choice from its flags, checked at start: the flags need root; --run-as names an
 * account that exists; they do not go together.
 */
export function chooseRunAs(
  flags: { runAs?: string; runAsOwner?: boolean },
  uid = process.getuid?.() ?? 0,
): RunAs {
  if (flags.runAs !== undefined && flags.runAsOwner)
    throw new RunAsError(
      "--run-as and --run-as-owner do not go together: one account for all jobs, or each job's owner",
    );
  if ((flags.runAs !== undefined || flags.runAsOwner) && uid !== 0)
    throw new RunAsError(
      `${flags.runAs !== undefined ? "--run-as" : "--run-as-owner"} needs the agent to run as root (it runs as ${os.userInfo().username}); without it, jobs run as the agent's own account`,
    );
  if (flags.runAs !== undefined) {
    const account = lookupAccount(flags.runAs);
    if (!account) throw new RunAsError(`--run-as ${flags.runAs}: no such local account`);
    if (account.uid === 0) throw new RunAsError(`--run-as ${flags.runAs}: that account is root`);
    return { kind: "user", account };
  }
  return flags.runAsOwner ? { kind: "owner" } : { kind: "self" };
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
      return { warn: false, message: "jobs run as the local account named like their owner: --run-as-owner" };
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

/** The account an attempt of `owner` runs as; null for the agent's own. Throws RunAsError naming a missing account. */
export function accountFor(runAs: RunAs, owner: string | undefined): Account | null {
  switch (runAs.kind) {
    case "self":
      return null;
    case "user":
      return runAs.account;
    case "owner": {
      const name = owner ?? "";
      const account = lookupAccount(name);
      if (!account)
        throw new RunAsError(
          `no local account "${name}" for the job's owner (this agent runs jobs as their owners: --run-as-owner)`,
        );
      if (account.uid === 0)
        throw new RunAsError(
          `the job's owner "${name}" maps to root, and this agent never runs jobs as root`,
        );
      return account;
    }
  }
}
