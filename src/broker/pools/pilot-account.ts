// Which local account a pool's pilots run as. Every job on a pilot runs as the pilot's account, so
// pilots that run as the broker's own account hand every user's job the broker's data folder
// (admin token, database, files). A pool names its account (`account:` in the pools file); the
// broker submits, lists and cancels its pilots as that account (runuser when the broker is root,
// sudo -n otherwise), and refuses at start a pool whose pilots would run as its own account unless
// the pool says `allowBrokerAccount: true`, or whose account could reach the broker's private
// folders.

import { execFileSync } from "node:child_process";
import { statSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import type { PoolSpec } from "../../common/model/pools-file.ts";

/** A local account as the system's user database has it. */
export interface LocalAccount {
  name: string;
  uid: number;
  home: string;
}

/** The account a pool's pilots run as, and how the broker runs a command as it. */
export interface PilotAccount {
  name: string;
  home: string;
  /** Whether it is the broker's own account. */
  own: boolean;
  /** Prefix that runs a command as the account: [] for the broker's own, runuser when root, sudo -n otherwise. */
  runAs: readonly string[];
}

/** A pool the broker will not run: the message says which and why. */
export class PoolAccountError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PoolAccountError";
  }
}

/** The local account of that name (through NSS, so LDAP accounts too), or null when there is none. */
function lookupAccount(name: string): LocalAccount | null {
  try {
    const line = execFileSync("getent", ["passwd", name], { encoding: "utf8", timeout: 5000 }).trim();
    const fields = line.split("\n")[0].split(":");
    if (fields.length < 7 || fields[0] !== name) return null;
    return { name, uid: Number(fields[2]), home: fields[5] };
  } catch {
    return null;
  }
}

/** The account this broker runs as. */
function brokerAccount(): LocalAccount {
  const me = userInfo();
  return { name: me.username, uid: me.uid, home: me.homedir };
}

export interface PoolAccounts {
  /** Each pool's pilot account, by pool name. */
  accounts: Map<string, PilotAccount>;
  /** One line a pool that accepts running as the broker's account (allowBrokerAccount): for the log. */
  warnings: { pool: string; message: string }[];
}

/**
 * Each pool's pilot account. Throws PoolAccountError for a pool whose pilots would run as the
 * broker's own account without allowBrokerAccount, whose account does not exist, or whose account
 * could reach one of the broker's private folders (its data folder, its blobs folder): those must
 * give other accounts no access at all (mode 0700).
 */
export function resolvePoolAccounts(
  pools: readonly PoolSpec[],
  privateDirs: readonly string[],
  broker: LocalAccount = brokerAccount(),
  lookup: (name: string) => LocalAccount | null = lookupAccount,
): PoolAccounts {
  const accounts = new Map<string, PilotAccount>();
  const warnings: PoolAccounts["warnings"] = [];
  for (const pool of pools) {
    const found = pool.account === undefined ? broker : lookup(pool.account);
    if (found === null)
      throw new PoolAccountError(
        `pool ${pool.name}: account ${pool.account} is no local account of this host`,
      );
    const own = found.uid === broker.uid;
    if (own && !pool.allowBrokerAccount)
      throw new PoolAccountError(
        `pool ${pool.name}: its pilots would run as the broker's own account ${broker.name}, so every job on them ` +
          "could read the broker's data folder (admin token, database, files); give the pool `account: NAME`, " +
          "a local account of its own, or set `allowBrokerAccount: true` to accept that",
      );
    if (own) {
      warnings.push({
        pool: pool.name,
        message:
          `pool ${pool.name}: pilots run as the broker's own account ${broker.name} (allowBrokerAccount): ` +
          "every job on them can read the broker's data folder (admin token, database, files)",
      });
    } else {
      for (const dir of privateDirs) {
        const mode = statSync(dir, { throwIfNoEntry: false })?.mode;
        if (mode !== undefined && (mode & 0o077) !== 0)
          throw new PoolAccountError(
            `pool ${pool.name}: its pilots run as ${found.name}, and the broker's folder ${dir} has mode ` +
              `0${(mode & 0o777).toString(8)}, so they could reach it; chmod 700 ${dir}`,
          );
      }
    }
    accounts.set(pool.name, {
      name: found.name,
      home: found.home,
      own,
      runAs: own
        ? []
        : broker.uid === 0
          ? ["runuser", "-u", found.name, "--"]
          : ["sudo", "-n", "-u", found.name, "--"],
    });
  }
  return { accounts, warnings };
}

/** The pool's folder for its pilots' token file, logs and work folders. */
export function poolPilotDir(pool: PoolSpec, account: PilotAccount, brokerPilotDir: string): string {
  if (pool.pilotDir) return pool.pilotDir;
  return account.own ? join(brokerPilotDir, pool.name) : join(account.home, ".steward-pilots", pool.name);
}
